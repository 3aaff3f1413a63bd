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
// that the WHATWG decoder replaces by one U+FFFD: the longest start of s that
// could still begin a character (utf8.FullRune, which checks each byte's
// range, says it could while false), or a single byte.
func maximalSubpart(s string) int {
	n := 1
	for n < min(len(s), utf8.UTFMax-1) && !utf8.FullRuneInString(s[:n+1]) {
		n++
	}
	return n
}
