package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// hub users writes the credentials and an accounts block nats-server reads;
// hub provision sets up the streams on a server with JetStream and fails
// when it cannot have the replicas asked for.
func TestHubUsersAndProvision(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	args := []string{"hub", "users", "--creds-dir", filepath.Join(dir, "creds"), "--relay-host", "alpha", "--approver", "ann"}
	if code := run(context.Background(), args, nil, &out, &errOut); code != 0 {
		t.Fatalf("users: %d %s", code, errOut.String())
	}
	if info, err := os.Stat(filepath.Join(dir, "creds", "relay-alpha.creds")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("relay credentials: %v %v", info, err)
	}
	conf := filepath.Join(dir, "nats.conf")
	accounts := filepath.Join(dir, "accounts.conf")
	if err := os.WriteFile(accounts, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	node := "listen: 127.0.0.1:-1\njetstream { store_dir: \"" + filepath.Join(dir, "store") + "\" }\ninclude \"accounts.conf\"\n"
	if err := os.WriteFile(conf, []byte(node), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PERMTUI_ADMIN_PASSWORD", "pw")
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server cannot read the accounts block: %v\n%s", err, out.String())
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("no server")
	}
	url := strings.Replace(srv.ClientURL(), "nats://", "nats://admin:pw@", 1)
	out.Reset()
	if code := run(context.Background(), []string{"hub", "provision", "--server", url, "--replicas", "3"}, nil, &out, &errOut); code == 0 {
		t.Fatal("3 replicas on one server were accepted")
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"hub", "provision", "--server", url, "--replicas", "1"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("provision: %d %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "set up with 1 replicas") {
		t.Fatalf("%q", out.String())
	}
}
