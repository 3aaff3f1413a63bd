package jsonparse

import (
	"bufio"
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

func parse(t *testing.T, text string) Value {
	t.Helper()
	v, err := Parse(text, 100)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return v
}

func TestStrictGrammar(t *testing.T) {
	for _, bad := range []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"a`, `"\x"`,
		`"\u12g4"`, "\"a\x01\"", `'a'`, `{a:1}`, `1 2`, `{}x`, "\xEF\xBB\xBF{}", `// c` + "\n{}", `[1 2]`, `{"a" 1}`, `NaN`,
	} {
		if v, err := Parse(bad, 100); err == nil {
			t.Errorf("Parse(%q) accepted %+v", bad, v)
		} else if se := (*SyntaxError)(nil); !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(bad) {
			t.Errorf("Parse(%q): %v is no SyntaxError within the text", bad, err)
		}
	}
	for _, good := range []string{` {} `, `[]`, `-0.0e-0`, `1E+400`, `"\/\b\f\n\r\t\"\\"`, "\t\r\n null"} {
		parse(t, good)
	}
}

// A repeated key keeps its first place and takes its last value and spans,
// below and above the size where an object indexes its keys.
func TestDuplicateKeysLastWins(t *testing.T) {
	for _, n := range []int{1, indexFrom, 3 * indexFrom} {
		var b strings.Builder
		b.WriteString(`{"dup":0`)
		for i := range n {
			b.WriteString(`,"k` + strings.Repeat("x", i) + `":1`)
		}
		b.WriteString(`,"dup":2}`)
		v := parse(t, b.String())
		if len(v.Members()) != n+1 || v.Members()[0].Key != "dup" || v.Get("dup").Str != "2" {
			t.Fatalf("%d keys: members %d, first %q, dup %q", n, len(v.Members()), v.Members()[0].Key, v.Get("dup").Str)
		}
		if at := v.Members()[0].KeyStart; b.String()[at:at+5] != `"dup"` || at == 1 {
			t.Errorf("%d keys: the repeated key's span starts at %d, want its last place", n, at)
		}
	}
	if v := parse(t, `{"a":1}`); v.Get("b").Kind != Absent || parse(t, `[1]`).Get("a").Kind != Absent {
		t.Error("a missing key or a non-object is not Absent")
	}
}

func TestSpans(t *testing.T) {
	text := ` {"a" : [1, "x\n", {"b":null}], "c":true } `
	v := parse(t, text)
	if text[v.Start:v.End] != `{"a" : [1, "x\n", {"b":null}], "c":true }` {
		t.Errorf("root span %q", text[v.Start:v.End])
	}
	a := v.Members()[0]
	if text[a.KeyStart:a.KeyStart+3] != `"a"` || text[a.Value.Start:a.Value.End] != `[1, "x\n", {"b":null}]` {
		t.Errorf("member a: key at %d, value %q", a.KeyStart, text[a.Value.Start:a.Value.End])
	}
	for i, want := range []string{`1`, `"x\n"`, `{"b":null}`} {
		if it := a.Value.Items()[i]; text[it.Start:it.End] != want {
			t.Errorf("item %d span %q, want %q", i, text[it.Start:it.End], want)
		}
	}
	if c := v.Members()[1].Value; text[c.Start:c.End] != "true" || !c.Bool || c.Kind != Bool {
		t.Errorf("c = %+v", c)
	}
}

func TestDepthBound(t *testing.T) {
	if _, err := Parse(strings.Repeat("[", 11)+strings.Repeat("]", 11), 10); err == nil || !strings.Contains(err.Error(), "nesting deeper than 10") {
		t.Errorf("11 levels with a bound of 10: %v", err)
	}
	if _, err := Parse(strings.Repeat(`{"a":`, 10)+"1"+strings.Repeat("}", 10), 10); err != nil {
		t.Errorf("10 levels: %v", err)
	}
}

func TestStrings(t *testing.T) {
	hi := string(AppendSurrogate(nil, 0xD83D))
	for text, want := range map[string]string{
		`"\ud83d\ude00"`: "😀", `"\ud83d"`: hi, `"\ud83dx"`: hi + "x", `"\ud83d\u0041"`: hi + "A",
		"\"a\xffb\"": "a\ufffdb", "\"\xed\xa0\xbd\"": "\ufffd\ufffd\ufffd", `"\u00e9\/"`: "é/", `"plain é"`: "plain é",
	} {
		if v := parse(t, text); v.Kind != String || v.Str != want {
			t.Errorf("Parse(%s) = %q, want %q", text, v.Str, want)
		}
	}
	if v := parse(t, `{"\ud800":1}`); v.Members()[0].Key != string(AppendSurrogate(nil, 0xD800)) {
		t.Errorf("a key's lone surrogate: %q", v.Members()[0].Key)
	}
}

// FuzzParseAgreesWithStdlib holds the reader to encoding/json's answers: the
// same texts accepted, the same values, the last of duplicate keys kept. A
// lone surrogate, which encoding/json writes as U+FFFD, is compared as
// U+FFFD (Parse keeps it, decision 0175); a leading BOM is refused by both.
func FuzzParseAgreesWithStdlib(f *testing.F) {
	seedFromVectors(f)
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":1,"A":2}`, `[1e400]`, `"\ud800"`, `{"a":"\u0000"} `, `1 2`, "\"\xff\"", `-0.0e-0`, `{"a":{}}x`, `[01e400]`, `[1.e400]`, `{"a":[-1e400,"\xff1"]}`, `["1e400",1E+400]`, `{"\ud800":1,"\udbff":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(string(data), 10000)
		want, stdErr := stdDecode(data)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%q: Parse error %v, encoding/json error %v", data, err, stdErr)
		}
		if err == nil && !reflect.DeepEqual(generic(v), want) {
			t.Fatalf("%q: Parse %#v, encoding/json %#v", data, generic(v), want)
		}
	})
}

// seedFromVectors adds every request file and response line as a seed.
func seedFromVectors(f *testing.F) {
	dir := testkit.Dir(f)
	files, err := filepath.Glob(filepath.Join(dir, "requests", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no request vectors: %v", err)
	}
	for _, name := range append(files, filepath.Join(dir, "responses.jsonl")) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 64<<10 { // the 2 MiB file only slows the fuzzer
			continue
		}
		if filepath.Ext(name) == ".json" {
			f.Add(data)
			continue
		}
		for sc := bufio.NewScanner(bytes.NewReader(data)); sc.Scan(); {
			f.Add(bytes.Clone(sc.Bytes()))
		}
	}
}

// generic is v as encoding/json decodes it with UseNumber, a lone surrogate
// written as U+FFFD.
func generic(v Value) any {
	switch v.Kind {
	case Null:
		return nil
	case Bool:
		return v.Bool
	case Number:
		return stdjson.Number(v.Str)
	case String:
		return surrogatesReplaced(v.Str)
	case Array:
		out := make([]any, len(v.Items()))
		for i, e := range v.Items() {
			out[i] = generic(e)
		}
		return out
	}
	// Two keys may meet once their surrogates are replaced: the later in
	// the text wins, as it does for encoding/json.
	members := slices.SortedFunc(slices.Values(v.Members()), func(a, b Member) int { return a.KeyStart - b.KeyStart })
	out := map[string]any{}
	for _, m := range members {
		out[surrogatesReplaced(m.Key)] = generic(m.Value)
	}
	return out
}

func surrogatesReplaced(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if len(s)-i >= 3 && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
			b.WriteString("\ufffd")
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stdDecode is Parse's contract written with encoding/json.
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

// Containers of more elements than a chunk, nested in and beside each other,
// read as encoding/json reads them.
func TestLargeContainers(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"big":[`)
	for i := range 3 * chunkLen {
		fmt.Fprintf(&b, `{"n":%d,"a":[%d,"s"],"k%d":true},`, i, i, i%3)
	}
	b.WriteString(`null],"keys":{`)
	for i := range 2*chunkLen + 5 {
		fmt.Fprintf(&b, `"k%d":[%d],`, i%(2*chunkLen), i)
	}
	b.WriteString(`"last":{}},"after":[[],[1,[2]]]}`)
	v := parse(t, b.String())
	want, err := stdDecode([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(generic(v), want) {
		t.Error("a text of large containers reads differently from encoding/json")
	}
	if n := len(v.Get("big").Items()); n != 3*chunkLen+1 {
		t.Errorf("big has %d items", n)
	}
	if keys := v.Get("keys"); len(keys.Members()) != 2*chunkLen+1 || keys.Get("k0").Items()[0].Str != "2048" {
		t.Errorf("keys: %d members, k0 = %+v", len(keys.Members()), keys.Get("k0"))
	}
}

// A syntax error names a non-ASCII character as a person reads it: the
// UTF-8 character, a BOM by name, or the byte that is not UTF-8 (each was
// shown as one Latin-1 character per byte).
func TestSyntaxErrorsNameCharactersAsRead(t *testing.T) {
	for text, want := range map[string]string{
		"\uFEFF{}":  "unexpected byte-order mark (U+FEFF)",
		"é":         `unexpected 'é'`,
		"\xff{}":    "unexpected byte 0xFF",
		"\u00a0{}":  `unexpected '\u00a0'`,
		"{} \u00e9": `unexpected 'é' after the JSON value`,
		"[1, x]":    `unexpected 'x'`,
	} {
		_, err := Parse(text, 100)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
}
