package safefs

import (
	"path/filepath"
	"testing"
)

func BenchmarkWriteFileAtomic(b *testing.B) {
	path := filepath.Join(b.TempDir(), "r.json")
	data := []byte(`{"approved":true,"state":"approved","responderSessionId":"s","respondedAt":1}`)
	for b.Loop() {
		if err := WriteFileAtomic(path, data); err != nil {
			b.Fatal(err)
		}
	}
}
