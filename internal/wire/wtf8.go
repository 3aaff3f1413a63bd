package wire

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Strings keep what JavaScript keeps (decision 0175). A JavaScript string is
// UTF-16 and may hold a lone surrogate, which JSON writes as a \u escape; a
// Go string holds it in the generalized UTF-8 of WTF-8: the three bytes
// ED A0..BF 80..BF, which valid UTF-8 never contains. A surrogate pair is
// always the four-byte UTF-8 of its code point, so equal JavaScript strings
// have equal Go bytes. This file is that representation's home (the JSON
// reader, internal/jsonparse, writes it as it decodes).

// SurrogateAt decodes the WTF-8 surrogate that starts s, if one does.
func SurrogateAt(s string) (u uint16, ok bool) {
	if len(s) < 3 || s[0] != 0xED || s[1] < 0xA0 || s[1] > 0xBF || s[2] < 0x80 || s[2] > 0xBF {
		return 0, false
	}
	return 0xD000 | uint16(s[1]&0x3F)<<6 | uint16(s[2]&0x3F), true
}

// HasSurrogate reports whether s holds a lone surrogate.
func HasSurrogate(s string) bool {
	for i := 0; i < len(s); i++ {
		if _, ok := SurrogateAt(s[i:]); ok {
			return true
		}
	}
	return false
}

// CodePoints counts s as JavaScript's string iterator does: a pair is one
// code point, and so is a lone surrogate.
func CodePoints(s string) int {
	n := utf8.RuneCountInString(s)
	for i := 0; i < len(s); i++ {
		if _, ok := SurrogateAt(s[i:]); ok {
			n -= 2 // counted as three invalid bytes
			i += 2
		}
	}
	return n
}

// ToValidWTF8 replaces each byte that is neither valid UTF-8 nor part of a
// surrogate's WTF-8 form by U+FFFD, and writes a high surrogate followed by
// a low one as their pair's code point, so a string from outside (a command
// line, an old file) holds only what a JavaScript string can, one way.
func ToValidWTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		if hi, ok := SurrogateAt(s[i:]); ok {
			if lo, ok := SurrogateAt(s[i+3:]); ok && hi < 0xDC00 && lo >= 0xDC00 {
				out = utf8.AppendRune(out, utf16.DecodeRune(rune(hi), rune(lo)))
				i += 6
				continue
			}
			out = append(out, s[i:i+3]...)
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// JSString is a string that JSON output writes as JSON.stringify does: a
// lone surrogate as its \u escape, where an encoder writes U+FFFD for each
// of its bytes.
type JSString string

// MarshalJSON implements json.Marshaler.
func (s JSString) MarshalJSON() ([]byte, error) { return appendJSONString(nil, string(s)), nil }

// appendJSONString appends s as a JSON string: a quote, a backslash and a
// control character escaped, a lone surrogate as \uXXXX, any other invalid
// byte as \ufffd, everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			if u, ok := SurrogateAt(s[i:]); ok {
				b = append(b, '\\', 'u', hex[u>>12], hex[u>>8&0xF], hex[u>>4&0xF], hex[u&0xF])
				i += 3
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	return append(b, '"')
}
