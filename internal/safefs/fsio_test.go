package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// withUmask runs f under a given umask, read again as at start; tests using
// it must not be parallel.
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	umaskNarrows = readUmask()&0o600 != 0
	defer func() {
		syscall.Umask(old)
		umaskNarrows = readUmask()&0o600 != 0
	}()
	f()
}

func TestWriteFileAtomicModesAndContent(t *testing.T) {
	for _, mask := range []int{0o000, 0o022, 0o277} {
		dir := t.TempDir()
		path := filepath.Join(dir, "x.json")
		withUmask(mask, func() {
			if err := WriteFileAtomic(path, []byte("one")); err != nil {
				t.Fatal(err)
			}
			if err := WriteFileAtomic(path, []byte("two")); err != nil { // replaces
				t.Fatal(err)
			}
		})
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("umask %o: mode %o, want 600", mask, fi.Mode().Perm())
		}
		if data, _ := os.ReadFile(path); string(data) != "two" {
			t.Errorf("content %q", data)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("leftover files: %v", entries)
		}
	}
}

// WriteFileSynced makes the missing directories 0700 and gives the file the
// mode asked for (a policy file keeps its own), whatever the umask, and
// replaces what was there, leaving no temp file.
func TestWriteFileSyncedModesDirsAndContent(t *testing.T) {
	for _, mask := range []int{0o000, 0o022, 0o277} {
		base := t.TempDir()
		path := filepath.Join(base, "a", "b", "config.json")
		withUmask(mask, func() {
			for _, data := range []string{"one", "two"} {
				if err := WriteFileSynced(path, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("umask %o: %v, %v; want mode 644", mask, fi, err)
		}
		if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("umask %o: dir %v, %v; want mode 700", mask, fi, err)
		}
		if data, _ := os.ReadFile(path); string(data) != "two" {
			t.Errorf("content %q", data)
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Errorf("leftover files: %v", entries)
		}
	}
}

func TestWriteFileAtomicTempNameAndFailure(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, tmp, err := d.createTemp("r.json")
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(f)
	// A second temp in the same millisecond must not collide.
	f2, tmp2, err := d.createTemp("r.json")
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(f2)
	for _, name := range []string{tmp, tmp2} {
		if !strings.HasPrefix(name, "r.json.") || strings.HasSuffix(name, ".json") || !strings.HasSuffix(name, ".tmp") {
			t.Errorf("temp name %s", name)
		}
	}
	if tmp == tmp2 {
		t.Error("temp names collide")
	}

	// A failing rename (the final path is a non-empty directory) leaves no
	// temp file behind.
	target := filepath.Join(dir, "sub", "r.json")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(target, []byte("x")); err == nil {
		t.Fatal("rename over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(filepath.Dir(target))
	if len(entries) != 1 || entries[0].Name() != "r.json" {
		t.Fatalf("after failure: %v", entries)
	}
	// Into a missing directory: nothing is created at all.
	if err := WriteFileAtomic(filepath.Join(dir, "nodir", "r.json"), []byte("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "nodir")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("WriteFileAtomic created a directory")
	}
}

func TestMkdirPrivate(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(base, "a", "b", "c")
	withUmask(0o277, func() {
		if err := MkdirPrivate(deep); err != nil {
			t.Fatal(err)
		}
		if err := MkdirPrivate(deep); err != nil { // idempotent
			t.Fatal(err)
		}
	})
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		fi, err := os.Stat(filepath.Join(base, d))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi.Mode(), err)
		}
	}
	if fi, _ := os.Stat(base); fi.Mode().Perm() != 0o755 {
		t.Error("an existing directory's mode was changed")
	}
	file := filepath.Join(base, "f")
	os.WriteFile(file, nil, 0o600)
	if err := MkdirPrivate(filepath.Join(file, "x")); err == nil {
		t.Error("mkdir under a file succeeded")
	}
}

func TestReadRegularFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	os.WriteFile(path, []byte("12345"), 0o600)
	if data, err := ReadRegularFile(path, 5); err != nil || string(data) != "12345" {
		t.Fatalf("%q %v", data, err)
	}
	if _, err := ReadRegularFile(path, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("size cap: %v", err)
	}
	link := filepath.Join(dir, "link.json")
	os.Symlink(path, link)
	if _, err := ReadRegularFile(link, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("symlink: %v", err)
	}
	// A FIFO with no writer would block a plain open; it must be refused.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegularFile(fifo, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("fifo: %v", err)
	}
	if _, err := ReadRegularFile(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v", err)
	}
	if _, err := ReadRegularFile("/dev/null", 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("device: %v", err)
	}
	if _, err := ReadRegularFile(filepath.Join(dir, "none.json"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestReadRegularFileFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadRegularFileFollow(link, 5); err != nil || string(data) != "12345" {
		t.Fatalf("linked regular file: %q %v", data, err)
	}
	if _, err := ReadRegularFileFollow(link, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("size cap through a link: %v", err)
	}
	// Following a link never makes a FIFO or device readable, nor blocks on one.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{fifo, "/dev/null"} {
		l := filepath.Join(dir, filepath.Base(target)+".link")
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRegularFileFollow(l, 100); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("link to %s: %v", target, err)
		}
	}
}

// OpenAppendPrivate creates 0600 and appends; it refuses a symlink, a
// FIFO (without blocking), a directory and a file others can read.
func TestOpenAppendPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events")
	for range 2 {
		f, err := OpenAppendPrivate(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("x\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "x\nx\n" {
		t.Fatalf("%q %v", data, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode() != 0o600 {
		t.Fatalf("mode %v %v", info.Mode(), err)
	}
	shared := filepath.Join(dir, "shared")
	if err := os.WriteFile(shared, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{shared, link, fifo, dir} {
		if f, err := OpenAppendPrivate(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v", bad, err)
			if f != nil {
				f.Close()
			}
		}
	}
}
