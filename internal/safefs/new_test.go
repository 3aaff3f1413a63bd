package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFileNew publishes a whole 0600 file under a free name and never
// replaces one already there: the existing file keeps its bytes, the error
// says so, and no temp file is left behind. Both ways of publishing are
// checked, so the fallback for file systems without RENAME_NOREPLACE is too.
func TestWriteFileNewNeverReplaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(d *Dir, name string, data []byte) error
	}{
		{"WriteFileNew", (*Dir).WriteFileNew},
		{"WriteFileNewSynced", (*Dir).WriteFileNewSynced},
		{"hard link", func(d *Dir, name string, data []byte) error { return d.writeNew(name, data, 0o600, false, linkNew) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			d, err := OpenDir(base)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := tc.write(d, "r.json", []byte("first")); err != nil {
				t.Fatal(err)
			}
			err = tc.write(d, "r.json", []byte("second"))
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("second write: %v, want an error that is fs.ErrExist", err)
			}
			path := filepath.Join(base, "r.json")
			if data, err := os.ReadFile(path); err != nil || string(data) != "first" {
				t.Fatalf("after the refused write: %q, %v", data, err)
			}
			st, err := os.Stat(path)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, %v", st.Mode(), err)
			}
			entries, err := os.ReadDir(base)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("temp file left: %s", e.Name())
				}
			}
			if len(entries) != 1 {
				t.Errorf("entries %v", entries)
			}
		})
	}
}
