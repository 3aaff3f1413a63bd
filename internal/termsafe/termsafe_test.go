package termsafe

import (
	json "github.com/goccy/go-json"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

func TestHidden(t *testing.T) {
	for _, r := range []rune{0x80, 0x9b, 0x9d, 0x9f, 0x200b, 0x200e, 0x202e, 0x2066, 0x2069, 0x061c, 0xfeff, 0x2028, 0x2029, 0xe0041} {
		if !Hidden(r) {
			t.Errorf("Hidden(%U) = false, want true", r)
		}
	}
	for _, r := range []rune{'a', ' ', 0xa0, 0xe9, 0x4e2d, 0x1f600, 0xfffd} {
		if Hidden(r) {
			t.Errorf("Hidden(%U) = true, want false", r)
		}
	}
}

// A JSON encoder escapes C0 controls but writes C1 controls (U+009B is the
// 8-bit CSI, which xterm and others act on in UTF-8) and bidi overrides as
// they are; EscapeJSON must leave none of them and keep the value.
func TestEscapeJSON(t *testing.T) {
	value := "a\u009b31mB\u202eC\u2066D\U000e0041E\u00e9\u4e2d\U0001f600 \\u009b \"q\""
	data, err := json.Marshal(map[string]string{"v": value})
	if err != nil {
		t.Fatal(err)
	}
	got := EscapeJSON(data)
	for _, r := range string(got) {
		if Hidden(r) || r < 0x20 {
			t.Fatalf("EscapeJSON left %U in %q", r, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("not JSON any more: %v: %q", err, got)
	}
	if back["v"] != value {
		t.Fatalf("value changed: %q, want %q", back["v"], value)
	}
	want := `{"v":"a\u009b31mB\u202eC\u2066D\udb40\udc41E` + "\u00e9\u4e2d\U0001f600" + ` \\u009b \"q\""}`
	if string(got) != want {
		t.Fatalf("EscapeJSON = %s\nwant         %s", got, want)
	}
	plain := []byte(`{"v":"plain"}`)
	if got := EscapeJSON(plain); &got[0] != &plain[0] {
		t.Error("EscapeJSON copied input that needs no escape")
	}
}

// Blanks shows every blank that would read as something else: a run as its
// length, two spaces, a space at either end, and any space but U+0020 by
// its code point (adversarial finding F5); plain text is left alone.
func TestBlanks(t *testing.T) {
	for in, want := range map[string]string{
		"echo ok":                     "echo ok",
		"npm test ":                   "npm test␠",
		" npm test":                   "␠npm test",
		"a  b":                        "a␠␠b",
		"a   b":                       "a ␠×3 b",
		"a\u00a0\u00a0\u00a0\u00a0b":  "a ␠×4 b",
		"/tmp\u00a0; rm -rf ~\u3000x": "/tmp⟨U+00A0⟩; rm -rf ~⟨U+3000⟩x",
		"a\u2009b":                    "a⟨U+2009⟩b",
		"a⇥⇥⇥b":                       "a ⇥×3 b",
		"a⇥ b":                        "a⇥ b",
	} {
		if got := Blanks(in); got != want {
			t.Errorf("Blanks(%q) = %q, want %q", in, got, want)
		}
	}
}

// A lookalike name is spelled by code point, controls included (F4); an
// invalid byte and a lone surrogate as Sanitize shows them, so neither reads
// as a real U+FFFD (decision 0253).
func TestCodePoints(t *testing.T) {
	for in, want := range map[string]string{
		"builder":       "builder",
		"build\u0435r":  "build⟨U+0435⟩r",
		"a\x1b[31mb":    "a⟨U+001B⟩[31mb",
		"x\xffy":        "x⟨0xFF⟩y",
		"x\ufffdy":      "x⟨U+FFFD⟩y",
		"x\xed\xa0\x80": "x⟨U+D800⟩",
	} {
		if got := CodePoints(in); got != want || NonASCII(in) != (in != "builder") {
			t.Errorf("CodePoints(%q) = %q, want %q (NonASCII %v)", in, got, want, NonASCII(in))
		}
	}
}

// The leaf's decoder of a lone surrogate's WTF-8 form is wire's, on every
// three bytes that start with the lead a surrogate has, and cut short.
func TestSurrogateAtIsWires(t *testing.T) {
	for b1 := range 256 {
		for b2 := range 256 {
			s := string([]byte{0xED, byte(b1), byte(b2)})
			for _, in := range []string{s, s[:2]} {
				u, ok := surrogateAt(in)
				wu, wok := wire.SurrogateAt(in)
				if u != wu || ok != wok {
					t.Fatalf("%q: termsafe %x %v, wire %x %v", in, u, ok, wu, wok)
				}
			}
		}
	}
}

// Clip never cuts a surrogate's bytes apart, at its head or its tail, and
// keeps to its limit when every byte shows wider.
func TestClipKeepsSurrogatesWhole(t *testing.T) {
	for _, n := range []int{5, 9, 200} {
		s := "a" + strings.Repeat("\xed\xa0\x80", n)
		got := Clip(s, 100)
		if strings.Contains(got, "\uFFFD") || len(got) > 100+clipNote+12 {
			t.Errorf("Clip of %d surrogates (%d bytes): %q", n, len(got), got)
		}
	}
}

// Clip keeps the head and the tail of what Sanitize shows, at most about
// the limit, and says how many bytes of the string it left out.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"git status", 8, "git status"}, // less left out than the note would take: whole
		{strings.Repeat("abcdefghij", 6), 8, "abcd…[52 bytes left out]…ghij"},
		{"\x1b[2J" + strings.Repeat("é", 30), 12, "␛[2J…[54 bytes left out]…ééé"},
		{"ab\x1b", 100, "ab␛"},
	} {
		if got := Clip(tc.in, tc.limit); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}
