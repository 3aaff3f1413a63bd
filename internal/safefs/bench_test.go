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

// A response written and taken by its child, as the inbox writes it: over
// whatever is there (WriteFileAtomic) or never over it (WriteFileNew,
// decision 0201).
func BenchmarkResponseWrite(b *testing.B) {
	data := []byte(`{"approved":true,"state":"approved","responderSessionId":"s","respondedAt":1}`)
	for _, w := range []struct {
		name  string
		write func(d *Dir, name string, data []byte) error
	}{{"atomic", (*Dir).WriteFileAtomic}, {"new", (*Dir).WriteFileNew}} {
		b.Run(w.name, func(b *testing.B) {
			d, err := OpenDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for b.Loop() {
				if err := w.write(d, "r.json", data); err != nil {
					b.Fatal(err)
				}
				if err := d.Remove("r.json"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
