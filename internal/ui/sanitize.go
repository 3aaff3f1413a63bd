package ui

import (
	"strings"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/termsafe"
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
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size <= 1 {
			b.WriteRune(unsafeMark) // invalid UTF-8, including raw 8-bit C1 bytes
			continue
		}
		b.WriteString(standIn(r))
	}
	return b.String()
}

// SanitizeLines splits an untrusted multi-line text at its newlines and
// sanitizes each line, for contexts that show text over several rows.
func SanitizeLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Sanitize(l)
	}
	return lines
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
	case termsafe.Hidden(r):
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
