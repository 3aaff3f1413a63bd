package hub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

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
	// The approver's probe of its mark left nothing on the hub.
	admin, err := h.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	st, err := js.Stream(ctx, DecisionsStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 0 {
		t.Fatalf("the decisions stream holds %d messages", n)
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

// A relay or approver on a hub that still has the permissions from before
// decisions 0211 and 0212 (grants keyed by the session digest alone, no
// approver marks) fails its check at connect, naming the refused subject,
// instead of serving with grants it can neither read nor write, or
// decisions it can never mark.
func TestOldPermissionsFailAtConnect(t *testing.T) {
	for _, tc := range []struct {
		role, name, refused string
		old                 *server.Permissions
	}{
		{RoleRelay, "alpha", GrantSubjectPrefix + "alpha.probe", oldPerms(RelayPermissions("alpha"), GrantSubjectPrefix+"alpha.", GrantSubjectPrefix)},
		{RoleApprover, "ann", ".ann.probe", oldPerms(ApproverPermissions("ann", []string{"alpha"}), DecisionSubjectPrefix+"*.*.ann.*", "")},
	} {
		c, err := newCreds(tc.role, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		_, pub, err := c.keyPair()
		if err != nil {
			t.Fatal(err)
		}
		srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true,
			Nkeys: []*server.NkeyUser{{Nkey: pub, Permissions: tc.old}}})
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		t.Cleanup(srv.Shutdown)
		if !srv.ReadyForConnections(testkit.WaitLimit) {
			t.Fatal("server not ready")
		}
		nc, err := Connect(srv.ClientURL(), c, tc.role, tc.name)
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected", tc.role)
		}
		if !strings.Contains(err.Error(), "the hub refuses these credentials") || !strings.Contains(err.Error(), tc.refused) {
			t.Fatalf("%s: %v", tc.role, err)
		}
	}
}

// oldPerms is p with was in place of now in its allowed publishes (an
// empty was: the permission removed).
func oldPerms(p *server.Permissions, now, was string) *server.Permissions {
	var allow []string
	for _, s := range p.Publish.Allow {
		if s = strings.Replace(s, now, was, 1); s != "" {
			allow = append(allow, s)
		}
	}
	p.Publish.Allow = allow
	return p
}
