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
//
// No two strings show alike (decision 0253): a character Sanitize spells
// by code point shows as ⟨U+200B⟩, an invalid byte as ⟨0xFF⟩, and a
// value's own ⟨, control pictures and ⇥ are spelled too, so none reads as
// a stand-in. So Sanitize is not idempotent: text already shown goes
// through Neutralize.
func Sanitize(s string) string { return show(s, true) }

// Neutralize is Sanitize for text the console composed: its own words
// around values Sanitize already showed. It shows what could drive the
// terminal as Sanitize does but keeps the stand-ins' characters as they
// are, so shown text passes unchanged (it is idempotent).
func Neutralize(s string) string { return show(s, false) }

func show(s string, spell bool) string {
	if isPlain(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		var size int
		b, size = appendShown(b, s[i:], spell)
		i += size
	}
	return string(b)
}

// appendShown appends what is shown for the first rune of s, and returns
// that rune's size in s. spell: the rune is a raw value's, whose
// stand-in characters are spelled (Sanitize), not the console's (Neutralize).
func appendShown(b []byte, s string, spell bool) ([]byte, int) {
	if u, ok := surrogateAt(s); ok {
		// By code point, not as three invalid bytes: "\ud800" and
		// "\udfff" must not both read "���" (decision 0250).
		return appendCodePoint(b, rune(u)), 3
	}
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size <= 1: // invalid UTF-8, including raw 8-bit C1 bytes
		b = append(b, "⟨0x"...)
		b = append(b, hex[s[0]>>4], hex[s[0]&0xf])
		return append(b, "⟩"...), 1
	case r == 0x1b:
		return append(b, "␛"...), 1
	case r == '\t':
		return append(b, "⇥"...), 1
	case r < 0x20:
		return utf8.AppendRune(b, 0x2400+r), 1 // Unicode control pictures: ␀ … ␟, ␊ and ␍ among them
	case r == 0x7f:
		return append(b, "␡"...), 1
	case Hidden(r), spell && standsIn(r):
		return appendCodePoint(b, r), size
	}
	return append(b, s[:size]...), size
}

// standsIn reports the printable characters Sanitize writes as stand-ins:
// the control pictures, ⇥ and the ⟨ that opens a code point. A value's own
// are spelled by code point, so a literal "␛" or "⟨U+200B⟩" never reads as
// ESC or U+200B (decision 0253). ⟩ needs nothing: a spelling ends at the
// first ⟩ after its ⟨.
func standsIn(r rune) bool { return r == '⟨' || r == '⇥' || (r >= 0x2400 && r <= 0x243f) }

const hex = "0123456789ABCDEF"

// appendCodePoint spells a rune by its code point: ⟨U+0435⟩.
func appendCodePoint(b []byte, r rune) []byte {
	b = append(b, "⟨U+"...)
	n := 4
	for r>>(4*n) != 0 {
		n++
	}
	for k := n - 1; k >= 0; k-- {
		b = append(b, hex[r>>(4*k)&0xf])
	}
	return append(b, "⟩"...)
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

// maxShown is the most bytes one byte of a string shows as: an invalid
// byte's ⟨0xFF⟩.
const maxShown = 10

// Clip sanitizes an untrusted string and keeps at most about limit bytes of
// what it shows: the head and the tail, with the number of the string's
// bytes left out between them. The result is always a fresh string, so
// keeping it never keeps the request alive (a substring would).
func Clip(s string, limit int) string { return clip(s, limit, true) }

// ClipNeutral is Clip for text composed around values already shown (a
// status, a log note), which Clip would spell again (Neutralize, 0253).
func ClipNeutral(s string, limit int) string { return clip(s, limit, false) }

func clip(s string, limit int, spell bool) string {
	if len(s) <= limit/maxShown { // even all stand-ins fit
		return strings.Clone(show(s, spell))
	}
	// head ends at byte i of s, tail starts at byte j; each shows in half.
	i, shown := 0, 0
	for i < len(s) {
		n, size := shownSize(s[i:], spell)
		if shown+n > limit/2 {
			break
		}
		shown, i = shown+n, i+size
	}
	j := len(s)
	for j > i {
		_, size := utf8.DecodeLastRuneInString(s[:j])
		if _, ok := surrogateAt(s[max(j-3, 0):j]); ok {
			size = 3 // a surrogate's WTF-8 bytes are not cut apart
		}
		n, _ := shownSize(s[j-size:], spell)
		if shown+n > limit {
			break
		}
		shown, j = shown+n, j-size
	}
	if shownWithin(s[i:j], clipNote, spell) { // the note would take more than it saves
		return strings.Clone(show(s, spell))
	}
	return show(s[:i], spell) + "…[" + strconv.Itoa(j-i) + " bytes left out]…" + show(s[j:], spell)
}

// shownWithin reports whether s shows in at most limit bytes, reading no
// further than that.
func shownWithin(s string, limit int, spell bool) bool {
	for i, shown := 0, 0; i < len(s); {
		n, size := shownSize(s[i:], spell)
		if shown += n; shown > limit {
			return false
		}
		i += size
	}
	return true
}

// shownSize is how many bytes the first rune of s shows as, and its size
// in s.
func shownSize(s string, spell bool) (shown, size int) {
	var scratch [16]byte // the longest stand-in: ⟨U+10FFFF⟩
	b, size := appendShown(scratch[:0], s, spell)
	return len(b), size
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
