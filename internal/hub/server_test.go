package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testConfig(t *testing.T) Config {
	dir := t.TempDir()
	return Config{
		Listen:    "127.0.0.1:0",
		StoreDir:  filepath.Join(dir, "store"),
		CredsDir:  filepath.Join(dir, "creds"),
		Relays:    []string{"alpha"},
		Approvers: []string{"ann"},
	}
}

// Credentials and asks would cross the network in clear text.
func TestRefusesNonLoopbackWithoutTLS(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:4222", ":4222"} {
		cfg := testConfig(t)
		cfg.Listen = listen
		if _, err := Start(cfg); err == nil || !strings.Contains(err.Error(), "without TLS") {
			t.Errorf("%s: %v", listen, err)
		}
	}
}

// The first start writes each role's credentials 0600; a restart reuses
// them, so relays and consoles keep working.
func TestCredentialsWrittenOnceAndPrivate(t *testing.T) {
	cfg := testConfig(t)
	h, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := h.CredsFile(RoleRelay, "alpha")
	h.Shutdown()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", info.Mode().Perm())
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadCreds(path)
	if err != nil || c.Role != RoleRelay || c.Name != "alpha" {
		t.Fatalf("%+v %v", c, err)
	}
	h, err = Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Shutdown()
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("a restart issued new credentials")
	}
}

func TestRejectsBadNames(t *testing.T) {
	cfg := testConfig(t)
	cfg.Relays = []string{"a.b"}
	if _, err := Start(cfg); err == nil {
		t.Fatal("a host with a dot became a subject token")
	}
	for _, name := range []string{"", "a b", "a*", "a>", strings.Repeat("x", 65)} {
		if ValidHost(name) {
			t.Errorf("ValidHost(%q)", name)
		}
	}
}
