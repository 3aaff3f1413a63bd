package wire

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/jsonparse"
)

// Every surrogate unit round-trips through its three WTF-8 bytes, which are
// never valid UTF-8, and nothing else decodes as one.
func TestSurrogateRoundTrip(t *testing.T) {
	for u := uint16(0xD800); ; u++ {
		b := jsonparse.AppendSurrogate(nil, u)
		if got, ok := SurrogateAt(string(b)); !ok || got != u || len(b) != 3 || utf8.Valid(b) {
			t.Fatalf("%#x: %x decodes as %#x, %v", u, b, got, ok)
		}
		if u == 0xDFFF {
			break
		}
	}
	for _, s := range []string{"", "\xed", "\xed\xa0", "\xed\x9f\xbf", "\xed\xa0\x7f", "\xee\x80\x80", "😀", "\ufffd"} {
		if u, ok := SurrogateAt(s); ok {
			t.Errorf("%q decodes as the surrogate %#x", s, u)
		}
	}
}

func TestToValidWTF8(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "plain", "a\xed\xa0\xbdb": "a\xed\xa0\xbdb", "a\xffb": "a\ufffdb", "\xed\xa0": "\ufffd\ufffd",
		"\xed\xa0\xbd\xff😀": "\xed\xa0\xbd\ufffd😀", "\xed\xa0\xbd\xed\xb8\x80": "😀", "\xed\xb8\x80\xed\xa0\xbd": "\xed\xb8\x80\xed\xa0\xbd",
	} {
		if got := ToValidWTF8(in); got != want {
			t.Errorf("ToValidWTF8(%q) = %q, want %q", in, got, want)
		}
	}
	if n := CodePoints("a😀\xed\xa0\xbd\xed\xa0\xbd\ufffd"); n != 5 {
		t.Errorf("CodePoints = %d, want 5", n)
	}
	if HasSurrogate("a\ufffd😀\xff") || !HasSurrogate("a\xed\xbf\xbf") {
		t.Error("HasSurrogate")
	}
}

// JSON.parse keeps a lone surrogate escape; the decoder used to write U+FFFD.
func TestDecodeJSONKeepsLoneSurrogates(t *testing.T) {
	hi, lo := string(jsonparse.AppendSurrogate(nil, 0xD83D)), string(jsonparse.AppendSurrogate(nil, 0xDE00))
	for text, want := range map[string]string{
		`"\ud83d"`:             hi,
		`"a\uD83Db"`:           "a" + hi + "b",
		`"\ude00"`:             lo,
		`"\ud83d\ude00"`:       "😀",
		`"\ude00\ud83d"`:       lo + hi,
		`"\ud83d\ud83d\ude00"`: hi + "😀",
		`"\\ud83d"`:            `\ud83d`,
		`"\\\ud83d"`:           `\` + hi,
		`"\ud83d\u0041"`:       hi + "A",
		`"\ufffd"`:             "\ufffd",
		"\"\xed\xa0\xbd\"":     "\ufffd\ufffd\ufffd", // raw bytes are not an escape: replaced as Node's decoder does
		`"\ud83d` + `\ud83d"`:  hi + hi,
	} {
		v, err := decodeJSON([]byte(text))
		if err != nil || v.Str != want {
			t.Errorf("decodeJSON(%s) = %q, %v; want %q", text, v.Str, err, want)
		}
	}
	// Nested values keep theirs, and so do keys, as in JSON.parse.
	v, err := decodeJSON([]byte(`{"\ud800" : ["\udfff", {"k\udfff":"\\\ud800"}]}`))
	arr := v.Get(string(jsonparse.AppendSurrogate(nil, 0xD800))).Items()
	if err != nil || len(arr) != 2 || arr[0].Str != string(jsonparse.AppendSurrogate(nil, 0xDFFF)) ||
		arr[1].Get("k"+string(jsonparse.AppendSurrogate(nil, 0xDFFF))).Str != `\`+string(jsonparse.AppendSurrogate(nil, 0xD800)) {
		t.Errorf("keys and nested values: %#v, %v", v, err)
	}
	// A request's match values carry the surrogate to the resolver.
	req, err := ParseRequest([]byte(`{"id":"r1","createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a",` +
		`"accessIntent":{"surface":"bash","matchValues":["x\ud83d"],"boundaryValue":null,"requesterCwd":"/w","principal":{"sessionId":"s","agentName":"a"}}}`))
	if err != nil || req.AccessIntent == nil || req.AccessIntent.MatchValues[0] != "x"+hi {
		t.Fatalf("ParseRequest: %+v, %v", req, err)
	}
	if strings.Contains(req.AccessIntent.MatchValues[0], "\ufffd") {
		t.Error("the match value holds U+FFFD")
	}
}

// JSString writes what decodeJSON reads back as the same string, a
// lone surrogate as its \u escape; invalid bytes become U+FFFD.
func TestJSStringRoundTrip(t *testing.T) {
	atoms := []string{"a", `"`, `\`, "\n", "\x00", "\x1f", "é", "😀", "\u2028", "\ufffd",
		string(jsonparse.AppendSurrogate(nil, 0xD83D)), string(jsonparse.AppendSurrogate(nil, 0xDC00)), "/", "<"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(atoms[rng.IntN(len(atoms))])
		}
		s := ToValidWTF8(b.String())
		out, _ := JSString(s).MarshalJSON()
		v, err := decodeJSON(out)
		if err != nil || v.Str != s {
			t.Fatalf("%q → %s → %q, %v", s, out, v.Str, err)
		}
	}
	if got, _ := JSString("x\xed\xa0\xbd\xff").MarshalJSON(); string(got) != `"x\ud83d\ufffd"` {
		t.Errorf("JSString = %s", got)
	}
}
