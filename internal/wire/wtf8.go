package wire

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/jsonparse"
)

// Strings keep what JavaScript keeps (decision 0175). A JavaScript string is
// UTF-16 and may hold a lone surrogate, which JSON writes as a \u escape; a
// Go string holds it in the generalized UTF-8 of WTF-8: the three bytes
// ED A0..BF 80..BF, which valid UTF-8 never contains. A surrogate pair is
// always the four-byte UTF-8 of its code point, so equal JavaScript strings
// have equal Go bytes. This file is that representation's home (the JSON
// reader, internal/jsonparse, writes it as it decodes).

// AppendSurrogate appends the WTF-8 form of the surrogate unit u
// (0xD800..0xDFFF); the JSON reader writes it, so it is defined there.
func AppendSurrogate(b []byte, u uint16) []byte { return jsonparse.AppendSurrogate(b, u) }

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

// KeepLoneSurrogates prepares a JSON text for a decoder that writes U+FFFD
// for a lone surrogate escape (goccy/go-json, encoding/json): decoded, its
// string values hold the surrogates as WTF-8, as JSON.parse keeps them. A
// text that is not valid JSON is returned as it is.
func KeepLoneSurrogates(data []byte) []byte {
	if _, err := decodeJSON(data); err != nil {
		return data
	}
	return keepLoneSurrogates(data)
}

// keepLoneSurrogates rewrites each lone surrogate escape in a string value
// of a valid JSON text as its raw WTF-8 bytes, which the decoder copies into
// the string, so the value keeps the surrogate JSON.parse keeps (the decoder
// alone writes U+FFFD). A high escape directly followed by a low one is a
// pair and stays. Object keys are left alone: they name fields, they are
// not facts, and the decoder would replace the raw bytes in a key.
func keepLoneSurrogates(data []byte) []byte {
	var out []byte
	copied := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(data) {
			break // not valid JSON: nothing more to keep
		}
		if !isKey(data[end+1:]) {
			for j := i + 1; j < end; j++ {
				if data[j] != '\\' {
					continue
				}
				u, ok := hexEscape(data[j:end])
				if !ok || !utf16.IsSurrogate(rune(u)) {
					j++ // the escaped character: a backslash does not escape the next
					continue
				}
				if lo, ok := hexEscape(data[j+6 : end]); u < 0xDC00 && ok && lo >= 0xDC00 && lo <= 0xDFFF {
					j += 11 // a pair
					continue
				}
				out = AppendSurrogate(append(out, data[copied:j]...), u)
				copied = j + 6
				j += 5
			}
		}
		i = end
	}
	if out == nil {
		return data
	}
	return append(out, data[copied:]...)
}

// isKey reports whether the text after a string's closing quote makes that
// string an object key.
func isKey(rest []byte) bool {
	for _, c := range rest {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == ':'
	}
	return false
}

// hexEscape decodes a \uXXXX escape at the start of b.
func hexEscape(b []byte) (uint16, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	u, ok := jsonparse.Hex4(string(b[2:6]))
	return uint16(u), ok
}

// JSString is a string that JSON output writes as JSON.stringify does: a
// lone surrogate as its \u escape, where an encoder writes U+FFFD for each
// of its bytes.
type JSString string

// MarshalJSON implements json.Marshaler.
func (s JSString) MarshalJSON() ([]byte, error) { return AppendJSONString(nil, string(s)), nil }

// AppendJSONString appends s as a JSON string: a quote, a backslash and a
// control character escaped, a lone surrogate as \uXXXX, any other invalid
// byte as \ufffd, everything else as it is.
func AppendJSONString(b []byte, s string) []byte {
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
