package safefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSwapRepublishesWithTwoInodes(t *testing.T) {
	base := t.TempDir()
	d, err := OpenDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	long := `{"n":"` + strings.Repeat("x", 40) + `"}`
	s, err := d.NewSwap("hb.json", []byte(long))
	if err != nil {
		if err == ErrSwapUnsupported {
			t.Fatal("the test file system cannot exchange names")
		}
		t.Fatal(err)
	}
	d.Close() // the Swap keeps its own descriptor
	path := filepath.Join(base, "hb.json")
	inodes := map[uint64]bool{}
	records := []string{long, `{"n":"short"}`, long, `{"n":"mid-length"}`}

	for i := range 2000 {
		if !s.Owned() {
			t.Fatal("Owned is false though nobody touched the file")
		}
		if err := s.Publish([]byte(records[i%len(records)])); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		inodes[st.Ino] = true
		if st.Mode&0o777 != 0o600 {
			t.Fatalf("mode %o", st.Mode&0o777)
		}
		// A reader that opens the name sees exactly the record, shorter
		// or longer than the one before.
		if got, err := os.ReadFile(path); err != nil || string(got) != records[i%len(records)] {
			t.Fatalf("publish %d: read %q, %v", i, got, err)
		}
	}
	if len(inodes) != 2 {
		t.Fatalf("%d inodes used for 2000 publishes, want 2", len(inodes))
	}

	// Someone else's atomic write replaces the record: Owned says so.
	if err := WriteFileAtomic(path, []byte(`{"other":1}`)); err != nil {
		t.Fatal(err)
	}
	if s.Owned() {
		t.Fatal("Owned after another writer replaced the file")
	}
	s.Close()
	entries, _ := os.ReadDir(base)
	if len(entries) != 1 || entries[0].Name() != "hb.json" {
		t.Fatalf("left behind: %v", entries)
	}
}
