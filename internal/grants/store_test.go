package grants

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

func TestGrantsPersistAndReload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "grants")
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("grants dir: %v %v", fi.Mode(), err)
	}
	a := wire.Grant{Surface: "bash", Pattern: "npm *"}
	b := wire.Grant{Surface: "external_directory", Pattern: "/o/p/*"}
	weird := "../../etc/passwd"
	if err := g.Add("s1", []wire.Grant{a, b, a}); err != nil {
		t.Fatal(err)
	}
	if err := g.Add("s1", []wire.Grant{b}); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(weird, []wire.Grant{a}); err != nil {
		t.Fatal(err)
	}
	if err := g.Add("", []wire.Grant{a}); err == nil {
		t.Error("an empty session id was accepted")
	}
	if err := g.Revoke("", a); err == nil {
		t.Error("an empty session id was accepted by Revoke")
	}
	if got := g.For("s1"); !reflect.DeepEqual(got, []wire.Grant{a, b}) {
		t.Fatalf("For(s1) = %v, want [a b] without duplicates", got)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := e.Info()
		if strings.Contains(e.Name(), "/") || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
			t.Errorf("grants file %s mode %v", e.Name(), fi.Mode())
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "etc")); err == nil {
		t.Error("a session id escaped the grants directory")
	}

	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := again.All(), g.All(); !reflect.DeepEqual(got, want) || len(got) != 2 {
		t.Fatalf("reloaded grants = %v, want %v", got, want)
	}
	if err := again.Revoke("s1", a); err != nil {
		t.Fatal(err)
	}
	third, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := third.For("s1"); !reflect.DeepEqual(got, []wire.Grant{b}) {
		t.Errorf("after revoke and reload: %v", got)
	}
	if got := third.For(weird); !reflect.DeepEqual(got, []wire.Grant{a}) {
		t.Errorf("weird session id: %v", got)
	}
	// The copy handed out is the caller's own.
	c := third.For("s1")
	c[0].Pattern = "changed"
	if third.For("s1")[0].Pattern != b.Pattern {
		t.Error("For returned shared storage")
	}
}

// Issue 8 scenario 4: a torn or empty grants file (a power loss) does not
// stop permtui; the backup takes its place, or no grants at all, and the
// damaged bytes are kept and reported.
func TestADamagedGrantsFileIsRecoveredAndReported(t *testing.T) {
	dir := t.TempDir()
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	npm := wire.Grant{Surface: "bash", Pattern: "npm *"}
	if err := g.Add("s1", []wire.Grant{npm}); err != nil {
		t.Fatal(err)
	}
	torn := `[{"surface":"bash"`
	testkit.WriteFile(t, filepath.Join(dir, "s1.json"), []byte(torn))
	testkit.WriteFile(t, filepath.Join(dir, "s2.json"), nil) // empty, no backup
	testkit.WriteFile(t, filepath.Join(dir, "s1.json.123.456.tmp"), []byte(`garbage`))

	g, err = Open(dir)
	if err != nil {
		t.Fatalf("Open = %v: a damaged grants file must not stop permtui", err)
	}
	if got := g.For("s1"); !reflect.DeepEqual(got, []wire.Grant{npm}) {
		t.Errorf("s1 from its backup: %v", got)
	}
	if got := g.For("s2"); len(got) != 0 {
		t.Errorf("s2 without a backup: %v", got)
	}
	repairs := strings.Join(g.Repairs(), "\n")
	if !strings.Contains(repairs, "s1.json was damaged") || !strings.Contains(repairs, "restored from its backup") ||
		!strings.Contains(repairs, "s2.json was damaged") || !strings.Contains(repairs, "no usable backup") {
		t.Errorf("repairs:\n%s", repairs)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "s1.json.damaged-*"))
	if len(kept) != 1 {
		t.Fatalf("damaged s1 kept as %v", kept)
	}
	if data, _ := os.ReadFile(kept[0]); string(data) != torn {
		t.Errorf("damaged bytes %q", data)
	}
}

// Scenario 4: two permtui processes on one state dir. A revocation by one
// is in force for the other at once, and neither overwrites the other's
// grants.
func TestGrantsAreSharedBetweenStoresOnOneDirectory(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	npm := wire.Grant{Surface: "bash", Pattern: "npm *"}
	if err := a.Add("s", []wire.Grant{npm}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.For("s"); !reflect.DeepEqual(got, []wire.Grant{npm}) {
		t.Fatalf("c sees %v", got)
	}
	if err := a.Revoke("s", npm); err != nil {
		t.Fatal(err)
	}
	if got := c.For("s"); len(got) != 0 {
		t.Fatalf("c still allows with a revoked grant: %v", got)
	}

	// Each adds a grant with a stale view: both survive.
	git := wire.Grant{Surface: "bash", Pattern: "git *"}
	make := wire.Grant{Surface: "bash", Pattern: "make *"}
	if err := a.Add("s", []wire.Grant{git}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add("s", []wire.Grant{make}); err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fresh.For("s"); !reflect.DeepEqual(got, []wire.Grant{git, make}) {
		t.Fatalf("on disk: %v, want both grants", got)
	}
}

func TestGrantsFailedWriteRecordsNothing(t *testing.T) {
	dir := t.TempDir()
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if os.Getuid() == 0 {
		t.Log("running as root: permissions do not stop writes; checking the success path instead")
		if err := g.Add("s", []wire.Grant{{Surface: "bash", Pattern: "x"}}); err != nil || len(g.For("s")) != 1 {
			t.Fatalf("Add = %v, For = %v", err, g.For("s"))
		}
		return
	}
	if err := g.Add("s", []wire.Grant{{Surface: "bash", Pattern: "x"}}); err == nil {
		t.Fatal("Add succeeded in a read-only directory")
	}
	if got := g.For("s"); len(got) != 0 {
		t.Errorf("a grant that was not persisted is in force: %v", got)
	}
}
