package safefs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		path, root string
		want       bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/b/..c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/x", "/", true},
		{"/", "/", true},
		{".pi/config.json", ".", true},
		{"proj/.pi", "proj", true},
		{"other/.pi", "proj", false},
		{"../proj", ".", false},
		{"rel", "/abs", false},
	} {
		if got := Within(c.path, c.root); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.path, c.root, got, c.want)
		}
	}
}

func TestRealPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	if abs, real := RealPath(link); abs != link || real != target {
		t.Errorf("RealPath(link) = %q, %q; want %q, %q", abs, real, link, target)
	}
	missing := filepath.Join(link, "missing")
	if abs, real := RealPath(missing); abs != missing || real != missing {
		t.Errorf("RealPath(missing) = %q, %q; want it unresolved, as absolute", abs, real)
	}
	t.Chdir(dir)
	if abs, real := RealPath("link/"); abs != link || real != target {
		t.Errorf("RealPath(relative) = %q, %q; want %q, %q", abs, real, link, target)
	}
}
