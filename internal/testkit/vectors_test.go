package testkit

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestVectorsMatchTheSharedSet notices when the team's shared vectors change:
// the project's copy (testdata/vectors) must equal ../shared/spec/vectors
// file for file. This is the one test that reads outside the module, and it
// skips, saying so, in a clone of the project alone.
func TestVectorsMatchTheSharedSet(t *testing.T) {
	shared, ok := sharedDir(t)
	if !ok {
		t.Skipf("%s is not beside the module (a clone of the project alone): nothing to compare the project's vectors with", shared)
	}
	own := Dir(t)
	ownFiles, sharedFiles := listFiles(t, own), listFiles(t, shared)
	var differ []string
	for name := range sharedFiles {
		if _, ok := ownFiles[name]; !ok {
			differ = append(differ, name+" (only in the shared set)")
		}
	}
	for name, path := range ownFiles {
		sharedPath, ok := sharedFiles[name]
		if !ok {
			differ = append(differ, name+" (only in testdata/vectors)")
			continue
		}
		if !bytes.Equal(read(t, path), read(t, sharedPath)) {
			differ = append(differ, name+" (contents differ)")
		}
	}
	sort.Strings(differ)
	for _, d := range differ {
		t.Errorf("testdata/vectors and %s differ: %s", shared, d)
	}
	if len(differ) > 0 {
		t.Log("the shared vectors changed: copy them in (cp -r ../shared/spec/vectors/. testdata/vectors/) and run the tests")
	}
}

func TestOwnVectorsArePresent(t *testing.T) {
	files := listFiles(t, Dir(t))
	for _, name := range []string{"README.md", "matcher.jsonl", "requests.jsonl", "responses.jsonl", "ruleset.jsonl"} {
		if _, ok := files[name]; !ok {
			t.Errorf("testdata/vectors/%s is missing", name)
		}
	}
}

// sharedDir is the team's shared vector set beside the module
// (../shared/spec/vectors), which the project's copy mirrors; ok is false
// when it is not there, as in a clone of the project alone.
func sharedDir(t testing.TB) (dir string, ok bool) {
	t.Helper()
	dir = filepath.Join(ModuleRoot(t), "..", "shared", "spec", "vectors")
	info, err := os.Stat(dir)
	return dir, err == nil && info.IsDir()
}

// listFiles maps each regular file's slash path under root to its full path.
func listFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = path
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
