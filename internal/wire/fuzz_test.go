package wire

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

// seedFromVectors adds every request file and response line as a seed.
func seedFromVectors(f *testing.F, requests bool) {
	dir := testkit.Dir(f)
	if requests {
		files, err := filepath.Glob(filepath.Join(dir, "requests", "*.json"))
		if err != nil || len(files) == 0 {
			f.Fatalf("no request vectors: %v", err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			if len(data) <= 64<<10 { // the 2 MiB file only slows the fuzzer
				f.Add(data)
			}
		}
		return
	}
	for _, v := range testkit.ReadJSONL[responseVector](f, "responses.jsonl") {
		if v.ResponseText != nil {
			f.Add([]byte(*v.ResponseText))
		} else {
			f.Add([]byte(v.Response))
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	seedFromVectors(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRequest(data)
		if err != nil {
			if _, ok := err.(*RejectError); !ok {
				t.Fatalf("error type %T", err)
			}
			return
		}
		if !ValidID(r.ID) {
			t.Fatalf("accepted unsafe id %q", r.ID)
		}
		if r.AccessIntent != nil && r.AccessIntent.AskingUnits != nil && len(r.AccessIntent.AskingUnits) == 0 {
			t.Fatal("empty askingUnits kept")
		}
		if r.SessionApproval != nil && len(r.SessionApproval.Grants) == 0 {
			t.Fatal("empty sessionApproval kept")
		}
		assertRoundTrip(t, r)
	})
}

func FuzzReadResponseAsChild(f *testing.F) {
	seedFromVectors(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadResponseAsChild(data)
		if err == nil && (c.DecidedBy != nil) != (c.DecidedByStatus == DecidedByKept) {
			t.Fatalf("decidedBy %+v with status %s", c.DecidedBy, c.DecidedByStatus)
		}
		// Whatever our writer accepts, the child must be able to read.
		r, err := DecodeResponse(data)
		if err != nil || ValidateResponse(r) != nil {
			return
		}
		out, err := MarshalResponse(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ReadResponseAsChild(out)
		if err != nil || back.Approved != r.Approved || back.State != r.State {
			t.Fatalf("writer output unreadable: %s: %v", out, err)
		}
	})
}
