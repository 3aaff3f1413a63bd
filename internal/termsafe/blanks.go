package termsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
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
					fmt.Fprintf(&b, "⟨%U⟩", r)
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
