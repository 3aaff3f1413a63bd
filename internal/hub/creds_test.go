package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/permtui/permtui/internal/testkit"
)

// Credentials edited to another name or role authenticate (the key is
// known) but the server refuses what they would do; Connect says so at
// once instead of serving silently (issue 20: "context deadline exceeded"
// only, and no ask ever sent).
func TestEditedCredentialsFailAtConnect(t *testing.T) {
	cfg := testConfig(t)
	cfg.Relays = []string{"alpha", "beta"}
	h := started(t, cfg)
	edit := func(path string, change func(*Creds)) Creds {
		c, err := ReadCreds(path)
		if err != nil {
			t.Fatal(err)
		}
		change(&c)
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "edited.creds")
		if err := os.WriteFile(out, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err = ReadCreds(out); err != nil {
			t.Fatal(err)
		}
		return c
	}
	relay, appr := h.CredsFile(RoleRelay, "alpha"), h.CredsFile(RoleApprover, "ann")
	for _, tc := range []struct {
		c          Creds
		role, name string
	}{
		{edit(relay, func(c *Creds) { c.Name = "beta" }), RoleRelay, "beta"},
		{edit(relay, func(c *Creds) { c.Role = RoleApprover; c.Name = "ann" }), RoleApprover, "ann"},
		{edit(appr, func(c *Creds) { c.Role = RoleRelay; c.Name = "alpha" }), RoleRelay, "alpha"},
	} {
		nc, err := Connect(h.URL(), tc.c, tc.role, tc.name)
		if err == nil {
			nc.Close()
			t.Fatalf("%s %s: connected", tc.role, tc.name)
		}
		if !strings.Contains(err.Error(), "the hub refuses these credentials as the "+tc.role+" "+tc.name) {
			t.Fatalf("%s %s: %v", tc.role, tc.name, err)
		}
	}
	// The credentials as issued pass.
	for _, rn := range [][2]string{{RoleRelay, "alpha"}, {RoleApprover, "ann"}} {
		c, err := ReadCreds(h.CredsFile(rn[0], rn[1]))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := Connect(h.URL(), c, rn[0], rn[1])
		if err != nil {
			t.Fatalf("%v: %v", rn, err)
		}
		nc.Close()
	}
}

// A credentials file others can read is refused, as ssh refuses a key.
func TestCredentialsReadableByOthersRefused(t *testing.T) {
	cfg := testConfig(t)
	h, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Shutdown()
	path := h.CredsFile(RoleRelay, "alpha")
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadCreds(path); err == nil || !strings.Contains(err.Error(), "readable by others") {
			t.Fatalf("%v: %v", mode, err)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCreds(path); err != nil {
		t.Fatal(err)
	}
}

// A relay on a hub that still has the permissions from before decision
// 0211 (grants keyed by the session digest alone) fails its check at
// connect, naming the refused subject, instead of serving with grants it
// can neither follow nor write.
func TestARelayOnTheOldGrantsPermissionsFailsAtConnect(t *testing.T) {
	c, err := newCreds(RoleRelay, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	_, pub, err := c.keyPair()
	if err != nil {
		t.Fatal(err)
	}
	perms := RelayPermissions("alpha")
	for i, s := range perms.Publish.Allow {
		perms.Publish.Allow[i] = strings.Replace(s, GrantSubjectPrefix+"alpha.", GrantSubjectPrefix, 1)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true,
		Nkeys: []*server.NkeyUser{{Nkey: pub, Permissions: perms}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(testkit.WaitLimit) {
		t.Fatal("server not ready")
	}
	nc, err := Connect(srv.ClientURL(), c, RoleRelay, "alpha")
	if err == nil {
		nc.Close()
		t.Fatal("connected")
	}
	if !strings.Contains(err.Error(), "the hub refuses these credentials") || !strings.Contains(err.Error(), GrantSubjectPrefix+"alpha.probe") {
		t.Fatal(err)
	}
}
