// Package termsafe names the characters of untrusted text that must never
// reach a terminal as they are, for every output that may be read on one:
// the console and the away outputs (which show stand-ins, Sanitize and
// Clip) and JSON lines (which escape them).
package termsafe

import (
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Hidden reports runes that drive or reorder a terminal yet are no C0
// control: C1 controls (U+0080–U+009F, which include the 8-bit CSI, OSC,
// DCS and ST that xterm acts on in UTF-8), every format character (bidi
// embeddings, overrides, isolates and marks, U+061C, zero-width characters,
// tag characters) and the line and paragraph separators.
func Hidden(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) ||
		unicode.Is(unicode.Cf, r) ||
		r == '\u2028' || r == '\u2029'
}

// EscapeJSON rewrites every Hidden rune in encoded JSON as a \u escape
// (a surrogate pair above U+FFFF). Such runes only occur inside strings,
// where the escape means the same value, so the JSON stays equal; an
// encoder already escapes C0 controls and invalid UTF-8. Input that needs
// nothing is returned as it is.
func EscapeJSON(data []byte) []byte {
	var out []byte
	done := 0
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if Hidden(r) {
			out = append(out, data[done:i]...)
			for _, u := range utf16.AppendRune(nil, r) {
				out = fmt.Appendf(out, `\u%04x`, u)
			}
			done = i + size
		}
		i += size
	}
	if out == nil {
		return data
	}
	return append(out, data[done:]...)
}
