package termsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// minRun is the shortest run of blanks Blanks shows as its length.
const minRun = 3

// Blanks shows, in text Sanitize made, each blank that would read as
// something else (decision 0061's rule for controls, applied to spaces): a
// run of minRun or more blanks (spaces of any kind, or tabs as Sanitize
// shows them) as its length, "echo ok ␠×120 ; rm -rf ~", so a one-line
// label cut to its width still shows what follows; two spaces, or one at
// either end, as ␠; and any other space (NBSP, U+3000 …) by its code point.
func Blanks(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == '⇥' || oddSpace(r) }) &&
		!strings.Contains(s, "  ") && !strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ") {
		return s // the usual label: nothing to show
	}
	blank := func(r rune) bool { return unicode.IsSpace(r) || r == '⇥' }
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && blank(rs[j]) && (rs[j] == '⇥') == (rs[i] == '⇥') {
			j++
		}
		switch {
		case j-i >= minRun:
			mark := "␠"
			if rs[i] == '⇥' {
				mark = "⇥"
			}
			b.WriteString(" " + mark + "×" + strconv.Itoa(j-i) + " ")
		case j > i:
			alone := j-i == 1 && i > 0 && j < len(rs)
			for _, r := range rs[i:j] {
				switch {
				case oddSpace(r):
					b.Write(appendCodePoint(nil, r))
				case r == ' ' && !alone:
					b.WriteString("␠")
				default:
					b.WriteRune(r)
				}
			}
		default:
			b.WriteRune(rs[i])
			j++
		}
		i = j
	}
	return b.String()
}

// oddSpace: a space that is not U+0020 (nor a control Sanitize shows).
func oddSpace(r rune) bool { return r != ' ' && r > 0x7f && unicode.IsSpace(r) }

// NonASCII reports a name with a character beyond printable ASCII, which
// can look like another name ("build\u0435r" like "builder").
func NonASCII(s string) bool { return strings.ContainsFunc(s, beyondASCII) }

// Lookalike reports a name that can read as another, which every place
// naming an agent marks ⚠ (decision 0205): a character beyond printable
// ASCII, or a blank Blanks shows ("builder ").
func Lookalike(name string) bool { return NonASCII(name) || Blanks(name) != name }

func beyondASCII(r rune) bool { return r >= utf8.RuneSelf || r < 0x20 || r == 0x7f }

// CodePoints spells every character of untrusted text beyond printable
// ASCII by its code point, so a name that looks like another reads as what
// it is ("build⟨U+0435⟩r"); an invalid byte shows as Sanitize shows it
// (⟨0xFF⟩), so no two names read alike; nothing else is left to drive a
// terminal.
func CodePoints(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1: // an invalid byte or a lone surrogate
			b, size = appendShown(b, s[i:], true)
		case beyondASCII(r):
			b = appendCodePoint(b, r)
		default:
			b = append(b, s[i])
		}
		i += size
	}
	return string(b)
}
