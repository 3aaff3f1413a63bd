package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestDirOperationsStayInTheDirectoryOpenedEvenAfterASymlinkSwap(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "responses"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "victim.json"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(root, "responses")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The child swaps responses/ for a symlink after we opened it.
	moved := filepath.Join(root, "moved")
	if err := os.Rename(filepath.Join(root, "responses"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "responses")); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFileAtomic("r.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove("victim.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove(victim.json) = %v, want not exist", err)
	}
	if _, _, err := d.ReadFileID("victim.json", testMax); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFileID(victim.json) = %v, want not exist", err)
	}
	if data, err := os.ReadFile(filepath.Join(moved, "r.json")); err != nil || string(data) != "{}" {
		t.Fatalf("write did not land in the opened directory: %q, %v", data, err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 || entries[0].Name() != "victim.json" {
		t.Fatalf("outside touched: %v", entries)
	}
	// Opening by path now refuses the symlink.
	if _, err := OpenDir(root, "responses"); !errors.Is(err, ErrNotDir) {
		t.Fatalf("OpenDir through a symlink = %v, want ErrNotDir", err)
	}
}

func TestDirRefusesNonDirectoriesAndNamesThatAreNotOneSegment(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(root, "file"); !errors.Is(err, ErrNotDir) {
		t.Errorf("OpenDir(file) = %v, want ErrNotDir", err)
	}
	if _, err := OpenDir(root, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenDir(missing) = %v, want not exist", err)
	}
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"", ".", "..", "a/b", "../file"} {
		if _, _, err := d.ReadFileID(name, testMax); err == nil {
			t.Errorf("ReadFileID(%q) succeeded", name)
		}
		if err := d.WriteFileAtomic(name, nil); err == nil {
			t.Errorf("WriteFileAtomic(%q) succeeded", name)
		}
	}
}

func TestDirRemoveNeverRemovesADirectory(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "x.json")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Remove("x.json"); err == nil {
		t.Fatal("removed a directory")
	}
	if st, err := os.Lstat(empty); err != nil || !st.IsDir() {
		t.Fatalf("directory gone: %v", err)
	}
	if m, err := d.Mode("x.json"); err != nil || !m.IsDir() {
		t.Fatalf("Mode = %v, %v", m, err)
	}
}

func TestDirListIsSortedFilteredAndBounded(t *testing.T) {
	root := t.TempDir()
	for i := 9; i >= 0; i-- {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("%d.json", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a.json.1.2.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	all, truncated, err := d.List(".json", 100, nil)
	if err != nil || truncated || len(all) != 10 {
		t.Fatalf("List = %d entries, truncated %v, %v", len(all), truncated, err)
	}
	for i, e := range all {
		if e.Name() != fmt.Sprintf("%d.json", i) {
			t.Fatalf("entry %d is %s", i, e.Name())
		}
	}
	// Listing twice reads from the start each time.
	some, truncated, err := d.List(".json", 4, nil)
	if err != nil || !truncated || len(some) != 4 {
		t.Fatalf("bounded List = %d entries, truncated %v, %v", len(some), truncated, err)
	}
	// Skipped names neither count nor come back.
	known := func(e fs.DirEntry) bool { return e.Name() < "8.json" }
	rest, truncated, err := d.List(".json", 4, known)
	if err != nil || truncated || len(rest) != 2 || rest[0].Name() != "8.json" || rest[1].Name() != "9.json" {
		t.Fatalf("List skipping 0-7 = %v, truncated %v, %v", rest, truncated, err)
	}
}

func TestOpenDirPrivateCreatesOwnerOnlyDirectories(t *testing.T) {
	root := t.TempDir()
	// An odd umask that would leave the new directories 0500.
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	d, err := OpenDirPrivate(root, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, p := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", p, st.Mode(), err)
		}
	}
	if err := os.Symlink(root, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDirPrivate(root, "link", "c"); !errors.Is(err, ErrNotDir) {
		t.Fatalf("OpenDirPrivate through a symlink = %v", err)
	}
}

// testMax bounds file reads in these tests.
const testMax = 1 << 20

// The identity of a file read stays the same while it is untouched and
// changes when another file takes its name, also after a delete and rewrite
// of the same size, which may reuse the inode number.
func TestFileIDTellsAReplacementFromTheFileRead(t *testing.T) {
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFileAtomic("r.json", []byte(`{"v":"make"}`)); err != nil {
		t.Fatal(err)
	}
	_, read, err := d.ReadFileID("r.json", testMax)
	if err != nil {
		t.Fatal(err)
	}
	if now, err := d.FileID("r.json"); err != nil || now != read {
		t.Fatalf("FileID of the untouched file = %v, %v; read %v", now, err, read)
	}
	if err := d.WriteFileAtomic("r.json", []byte(`{"v":"rm -r"}`)); err != nil {
		t.Fatal(err)
	}
	if now, err := d.FileID("r.json"); err != nil || now == read {
		t.Fatalf("FileID after a rename over = %v, %v; read %v", now, err, read)
	}
	_, read, _ = d.ReadFileID("r.json", testMax)
	if err := d.Remove("r.json"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "r.json"), []byte(`{"v":"rm -x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if now, err := d.FileID("r.json"); err != nil || now == read {
		t.Fatalf("FileID after delete and rewrite = %v, %v; read %v", now, err, read)
	}
	if err := os.Mkdir(filepath.Join(root, "dir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := d.FileID("dir.json"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("FileID of a directory = %v, want ErrNotRegular", err)
	}
}
