package resolve

import (
	"strings"
	"unicode/utf8"
)

// decodeUTF8 reads bytes as Node's readFileSync(file, "utf-8") does: the
// WHATWG UTF-8 decoder, which writes one U+FFFD per maximal subpart of an
// ill-formed sequence (E2 82 then "x" is one U+FFFD, FF FE are two).
// strings.ToValidUTF8 would write one per run, and a pattern key would then
// match other values than in pi (decision 0021).
func decodeUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			b.WriteByte(s[i])
			i++
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += maximalSubpart(s[i:])
	}
	return b.String()
}

// maximalSubpart is the length of the ill-formed sequence at the start of s
// that the WHATWG decoder replaces by one U+FFFD: a valid lead byte and the
// continuation bytes that still fit it, or a single byte.
func maximalSubpart(s string) int {
	lead := s[0]
	var need int
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		need = 1
	case lead >= 0xE0 && lead <= 0xEF:
		need = 2
	case lead >= 0xF0 && lead <= 0xF4:
		need = 3
	default:
		return 1
	}
	// The second byte's range excludes overlongs, surrogates and code
	// points above U+10FFFF.
	lower, upper := byte(0x80), byte(0xBF)
	switch lead {
	case 0xE0:
		lower = 0xA0
	case 0xED:
		upper = 0x9F
	case 0xF0:
		lower = 0x90
	case 0xF4:
		upper = 0x8F
	}
	n := 1
	for ; n <= need && n < len(s); n++ {
		if s[n] < lower || s[n] > upper {
			break
		}
		lower, upper = 0x80, 0xBF
	}
	return n
}
