package termsafe

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Values that differ only in what Sanitize stands in for must not show
// alike where a person approves one (decision 0253): before, every one of
// these pairs read the same (�, or a literal stand-in as the control).
func TestNoTwoValuesShowAlike(t *testing.T) {
	for _, pair := range [][2]string{
		{"rm x\u200b", "rm x\u200c"},
		{"rm x\u200b", "rm x\ufffd"},
		{"rm x\xff", "rm x\ufffd"},
		{"rm x\xff", "rm x\xfe"},
		{"a\u202eb", "a\u202db"},
		{"a\u0085b", "a\u009bb"},
		{"a\u2028b", "a\u2029b"},
		{"tag\U000E0041", "tag\U000E0042"},
		{"echo \u200b", "echo ⟨U+200B⟩"},
		{"echo \xed\xa0\x80", "echo ⟨U+D800⟩"},
		{"echo \xff", "echo ⟨0xFF⟩"},
		{"a\x1b[31m", "a␛[31m"},
		{"a\nb", "a␊b"},
		{"a\tb", "a⇥b"},
		{"a\x7fb", "a␡b"},
		{"a\u00a0b", "a⟨U+00A0⟩b"},
	} {
		if a, b := Sanitize(pair[0]), Sanitize(pair[1]); a == b {
			t.Errorf("Sanitize(%q) = Sanitize(%q) = %q", pair[0], pair[1], a)
		}
	}
	for in, want := range map[string]string{
		"rm x\u200b":    "rm x⟨U+200B⟩",
		"rm x\ufffd":    "rm x\ufffd",
		"rm x\xff":      "rm x⟨0xFF⟩",
		"tag\U000E0041": "tag⟨U+E0041⟩",
		"a\u0085b":      "a⟨U+0085⟩b",
		"echo ⟨U+200B⟩": "echo ⟨U+27E8⟩U+200B⟩",
		"a␛[31m":        "a⟨U+241B⟩[31m",
		"a⇥b":           "a⟨U+21E5⟩b",
		"a\x1b[31m\t":   "a␛[31m⇥",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// Sanitize is one to one on every string, valid UTF-8 or not: shown reads
// back to the very bytes it came from. Checked on every string of up to
// three pieces that each show by some rule, and fuzzed.
func TestSanitizeReadsBack(t *testing.T) {
	pieces := []string{"a", " ", "\x1b", "\n", "\t", "\x00", "\x7f", "\u0085", "\u200b", "\u200c",
		"\u202e", "\U000E0041", "\u2028", "\ufffd", "\xff", "\xed", "\xa0", "\x80", "\xed\xa0\x80",
		"\xed\xbf\xbf", "⟨", "⟩", "U+200B", "0xFF", "␛", "␊", "⇥", "␡", "␠", "é", "日"}
	var walk func(s string, n int)
	walk = func(s string, n int) {
		if got := readBack(Sanitize(s)); got != s {
			t.Fatalf("Sanitize(%q) = %q reads back as %q", s, Sanitize(s), got)
		}
		if n == 0 {
			return
		}
		for _, p := range pieces {
			walk(s+p, n-1)
		}
	}
	walk("", 3)
}

func FuzzSanitizeReadsBack(f *testing.F) {
	for _, s := range []string{"", "rm x\u200b", "\xed\xa0\x80\xed", "⟨U+200B⟩\xff", "␛\x1b⇥\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if got := readBack(Sanitize(in)); got != in {
			t.Fatalf("Sanitize(%q) = %q reads back as %q", in, Sanitize(in), got)
		}
	})
}

// readBack inverts Sanitize, which proves it one to one: a spelling runs
// from ⟨ to the first ⟩; a control picture, ␡ and ⇥ are the controls; any
// other character is itself.
func readBack(shown string) string {
	var b []byte
	for i := 0; i < len(shown); {
		r, size := utf8.DecodeRuneInString(shown[i:])
		switch {
		case r == '⟨':
			end := i + strings.Index(shown[i:], "⟩")
			spelled := shown[i+size : end]
			if hexByte, ok := strings.CutPrefix(spelled, "0x"); ok {
				v, _ := strconv.ParseUint(hexByte, 16, 8)
				b = append(b, byte(v))
			} else {
				v, _ := strconv.ParseUint(strings.TrimPrefix(spelled, "U+"), 16, 32)
				if v >= 0xD800 && v <= 0xDFFF { // a lone surrogate's WTF-8 bytes
					b = append(b, 0xED, byte(0x80|(v>>6)&0x3F), byte(0x80|v&0x3F))
				} else {
					b = utf8.AppendRune(b, rune(v))
				}
			}
			size = end + len("⟩") - i
		case r >= 0x2400 && r < 0x2420:
			b = append(b, byte(r-0x2400))
		case r == '␡':
			b = append(b, 0x7f)
		case r == '⇥':
			b = append(b, '\t')
		default:
			b = append(b, shown[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// Clip keeps to about its limit when every byte is spelled (an invalid
// byte shows as ten: ⟨0xFF⟩), and never cuts a spelling apart.
func TestClipKeepsToItsLimitWhenEveryByteIsSpelled(t *testing.T) {
	for _, n := range []int{5, 10, 11, 25, 200} {
		got := Clip(strings.Repeat("\xff", n), 100)
		head, tail, clipped := strings.Cut(got, "…[")
		if clipped {
			tail = tail[strings.Index(tail, "]…")+len("]…"):]
		}
		if len(got) > 100+clipNote || strings.Count(head+tail, "⟨0xFF⟩")*len("⟨0xFF⟩") != len(head+tail) {
			t.Errorf("Clip of %d invalid bytes (%d shown): %q", n, len(got), got)
		}
	}
}
