package wire

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// FuzzDecodeJSONAgreesWithStdlib holds the generic decode (goccy/go-json) to
// encoding/json's answers: the same texts accepted, the same values, the last
// of duplicate keys kept. A lone surrogate, which encoding/json writes as
// U+FFFD, is compared as U+FFFD (decodeJSON keeps it, decision 0175).
func FuzzDecodeJSONAgreesWithStdlib(f *testing.F) {
	seedFromVectors(f, true)
	seedFromVectors(f, false)
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":1,"A":2}`, `[1e400]`, `"\ud800"`, `{"a":"\u0000"} `, `1 2`, "\"\xff\"", `-0.0e-0`, `{"a":{}}x`, `[01e400]`, `[1.e400]`, `{"a":[-1e400,"\xff1"]}`, `["1e400",1E+400]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeJSON(data)
		want, stdErr := stdDecode(data)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%q: decodeJSON error %v, encoding/json error %v", data, err, stdErr)
		}
		if err == nil && !reflect.DeepEqual(surrogatesReplaced(got), want) {
			t.Fatalf("%q: decodeJSON %#v, encoding/json %#v", data, got, want)
		}
	})
}

// surrogatesReplaced writes each lone surrogate in v's strings as U+FFFD.
func surrogatesReplaced(v any) any {
	switch v := v.(type) {
	case string:
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			if _, ok := SurrogateAt(v[i:]); ok {
				b.WriteString("\ufffd")
				i += 2
				continue
			}
			b.WriteByte(v[i])
		}
		return b.String()
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = surrogatesReplaced(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = surrogatesReplaced(e)
		}
		return out
	}
	return v
}

// stdDecode is decodeJSON's contract written with encoding/json.
func stdDecode(data []byte) (any, error) {
	if bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) || !stdjson.Valid(data) {
		return nil, errors.New("invalid")
	}
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
