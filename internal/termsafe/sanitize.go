package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sanitize makes an untrusted string safe to print on one terminal line.
// Nothing in the result can drive the terminal, and nothing is hidden from
// the person reading it: every character that could (control characters,
// escape introducers, bidi and other invisible format characters, invalid
// UTF-8) is replaced by a visible stand-in, and the bytes that followed it are
// kept as plain text. Newline, tab and carriage return become ␊, ⇥ and ␍.
// See docs/decisions/0061-neutralize-not-strip.md for why sequences are
// neutralized rather than cut out.
func Sanitize(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		shown, size := shownRune(s[i:])
		i += size
		b.WriteString(shown)
	}
	return b.String()
}

// shownRune is what Sanitize shows for the first rune of s, and that rune's
// size in s.
func shownRune(s string) (string, int) {
	if u, ok := surrogateAt(s); ok {
		// By code point, not as three invalid bytes: "\ud800" and
		// "\udfff" must not both read "���" (decision 0250).
		return codePoint(rune(u)), 3
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return string(unsafeMark), size // invalid UTF-8, including raw 8-bit C1 bytes
	}
	return standIn(r), size
}

// surrogateAt decodes the WTF-8 form of a lone surrogate (ED A0..BF 80..BF)
// that starts s, which is how a request keeps one (decision 0175). It is
// wire.SurrogateAt, which this leaf may not import (decision 0002);
// TestSurrogateAtIsWires holds the two equal.
func surrogateAt(s string) (uint16, bool) {
	if len(s) < 3 || s[0] != 0xED || s[1] < 0xA0 || s[1] > 0xBF || s[2] < 0x80 || s[2] > 0xBF {
		return 0, false
	}
	return 0xD000 | uint16(s[1]&0x3F)<<6 | uint16(s[2]&0x3F), true
}

// clipNote is about the length of Clip's note of what it left out.
const clipNote = 32

// Clip sanitizes an untrusted string and keeps at most about limit bytes of
// what it shows: the head and the tail, with the number of the string's
// bytes left out between them. The result is always a fresh string, so
// keeping it never keeps the request alive (a substring would).
func Clip(s string, limit int) string {
	if len(s) <= limit/4 { // even all stand-ins fit (at most 4 bytes a byte: a surrogate's 3 show as 12)
		return strings.Clone(Sanitize(s))
	}
	// head ends at byte i of s, tail starts at byte j; each shows in half.
	i, shown := 0, 0
	for i < len(s) {
		r, size := shownRune(s[i:])
		if shown+len(r) > limit/2 {
			break
		}
		shown, i = shown+len(r), i+size
	}
	j := len(s)
	for j > i {
		_, size := utf8.DecodeLastRuneInString(s[:j])
		if _, ok := surrogateAt(s[max(j-3, 0):j]); ok {
			size = 3 // a surrogate's WTF-8 bytes are not cut apart
		}
		r, _ := shownRune(s[j-size:])
		if shown+len(r) > limit {
			break
		}
		shown, j = shown+len(r), j-size
	}
	if j-i <= clipNote { // the note would take more than it saves
		return strings.Clone(Sanitize(s))
	}
	return Sanitize(s[:i]) + "…[" + strconv.Itoa(j-i) + " bytes left out]…" + Sanitize(s[j:])
}

// unsafeMark stands for a character that is neither printable nor a known
// control: invalid UTF-8, C1 controls, and invisible format characters such
// as bidi overrides.
const unsafeMark = '\uFFFD'

func standIn(r rune) string {
	switch {
	case r == 0x1b:
		return "␛"
	case r == '\n':
		return "␊"
	case r == '\t':
		return "⇥"
	case r == '\r':
		return "␍"
	case r < 0x20:
		return string(rune(0x2400 + r)) // Unicode control pictures: ␀ … ␟
	case r == 0x7f:
		return "␡"
	case Hidden(r):
		return string(unsafeMark)
	}
	return string(r)
}

// isPlain is the fast path: printable ASCII needs no work.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
