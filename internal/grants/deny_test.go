package grants

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

// A grants file written before session denies existed loads unchanged, and
// denies persist beside it, reload, survive another process's change and
// are revoked on disk.
func TestDeniesPersistBesideOldGrantsFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grants")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := `[{"surface":"bash","pattern":"npm *"}]`
	if err := os.WriteFile(filepath.Join(dir, "root-1.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.For("root-1"); !reflect.DeepEqual(got, []wire.Grant{{Surface: "bash", Pattern: "npm *"}}) {
		t.Fatalf("old grants file: %v", got)
	}
	if d, err := g.Denies("root-1"); err != nil || len(d) != 0 {
		t.Fatalf("denies of an old state dir = %v, %v", d, err)
	}
	rm := Deny{Grant: wire.Grant{Surface: "bash", Pattern: "rm *"}, Reason: "no deleting"}
	if err := g.AddDeny("root-1", rm); err != nil {
		t.Fatal(err)
	}
	if err := g.AddDeny("root-1", Deny{Grant: rm.Grant, Reason: "other"}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddDeny("", rm); err == nil {
		t.Error("an empty session id was accepted")
	}
	// Another permtui on the same directory sees it, and the grant too.
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := other.Denies("root-1"); !reflect.DeepEqual(d, []Deny{rm}) {
		t.Fatalf("reloaded denies = %v, want [%v] (the first reason kept)", d, rm)
	}
	if len(other.For("root-1")) != 1 || !reflect.DeepEqual(other.AllDenies(), map[string][]Deny{"root-1": {rm}}) {
		t.Fatalf("reloaded: grants %v, denies %v", other.For("root-1"), other.AllDenies())
	}
	data, _ := os.ReadFile(filepath.Join(dir, "root-1.json"))
	if string(data) != old {
		t.Errorf("the grants file changed: %s", data)
	}
	if err := other.RevokeDeny("root-1", rm); err != nil {
		t.Fatal(err)
	}
	if d, err := g.Denies("root-1"); err != nil || len(d) != 0 {
		t.Fatalf("after revocation elsewhere: %v, %v", d, err)
	}
	for _, e := range mustReadDir(t, dir) {
		if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", e.Name(), fi.Mode())
		}
	}
}

// A torn denies file is recovered from its backup like a grants file, and
// reported.
func TestTornDeniesFileRecovered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grants")
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rm := Deny{Grant: wire.Grant{Surface: "bash", Pattern: "rm *"}, Reason: "no"}
	if err := g.AddDeny("root-1", rm); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "root-1"+denySuffix), []byte(`[{"surf`), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Denies("root-1"); !reflect.DeepEqual(d, []Deny{rm}) {
		t.Fatalf("recovered denies = %v", d)
	}
	if r := again.Repairs(); len(r) != 1 || !strings.Contains(r[0], "restored from its backup") {
		t.Fatalf("repairs = %v", r)
	}
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return es
}
