package inbox

import (
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// A response to the longest id the wire allows still fits, temp name included,
// in one file name.
func TestTheLongestValidIDCanBeAnswered(t *testing.T) {
	long := strings.Repeat("7", wire.MaxIDLength)
	if !wire.ValidID(long) || wire.ValidID(long+"7") {
		t.Fatal("wire.MaxIDLength is not the bound")
	}
	d, err := safefs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The longest temp name: Linux pids have up to 7 digits, ms 13, the
	// counter up to 20.
	if n := len(long + ".json.4194304.1791279012345.18446744073709551615.tmp"); n > 255 {
		t.Fatalf("temp name of %d bytes", n)
	}
	if err := d.WriteFileAtomic(long+".json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
}
