package resolve

import (
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/wire"
)

// refUnits decodes s to UTF-16 units: a lone surrogate's WTF-8 form is that
// unit, any other invalid byte b the unit 0xDC00|b.
func refUnits(s string) []uint16 {
	var out []uint16
	for len(s) > 0 {
		if u, ok := wire.SurrogateAt(s); ok {
			out = append(out, u)
			s = s[3:]
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			out = append(out, 0xDC00|uint16(s[0]))
		} else {
			out = utf16.AppendRune(out, r)
		}
		s = s[size:]
	}
	return out
}

// refGlob is the textbook dynamic-programming wildcard match over units.
func refGlob(p, v []uint16) bool {
	// m[i][j]: p[:i] matches v[:j]
	m := make([][]bool, len(p)+1)
	for i := range m {
		m[i] = make([]bool, len(v)+1)
	}
	m[0][0] = true
	for i := 1; i <= len(p); i++ {
		for j := 0; j <= len(v); j++ {
			switch p[i-1] {
			case '*':
				m[i][j] = m[i-1][j] || (j > 0 && m[i][j-1])
			case '?':
				m[i][j] = j > 0 && m[i-1][j-1]
			default:
				m[i][j] = j > 0 && m[i-1][j-1] && p[i-1] == v[j-1]
			}
		}
	}
	return m[len(p)][len(v)]
}

// refMatch is §5 without home expansion: anchored glob plus the optional
// trailing " *".
func refMatch(pattern, value string) bool {
	p, v := refUnits(wire.ToValidWTF8(pattern)), refUnits(value)
	if refGlob(p, v) {
		return true
	}
	n := len(p)
	return n >= 2 && p[n-1] == '*' && p[n-2] == ' ' && refGlob(p[:n-2], v)
}

// splitPair reports whether s holds a pair as two WTF-8 surrogates.
func splitPair(s string) bool {
	for i := 0; i < len(s); i++ {
		if hi, ok := wire.SurrogateAt(s[i:]); ok && hi < 0xDC00 {
			if lo, ok := wire.SurrogateAt(s[i+3:]); ok && lo >= 0xDC00 {
				return true
			}
		}
	}
	return false
}

func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"git *", "git status"}, {"a?b", "a😀b"}, {"a??b", "a😀b"}, {"*.env.*", "/w/.env.x"},
		{"?*", "*"}, {"a **", "a"}, {" *", ""}, {"*a*b?c*", "xxaxbyczz"}, {"\xff*", "\xc3\x80"}, {"*\x80", "\xc3\x80"},
		{"\xed\xa0\xbd*", "😀"}, {"*\xed\xb8\x80", "x😀"}, {"?\xed\xb8\x80", "😀"}, {"\xed\xa0\xbd\xed\xb8\x80", "😀"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, value string) {
		if len(pattern) > 64 || len(value) > 256 {
			return // the reference is quadratic
		}
		if splitPair(value) {
			return // not a string wire or a parser makes (ToValidWTF8 joins it)
		}
		p := CompilePattern(pattern, "")
		if got, want := p.Match(value), refMatch(pattern, value); got != want {
			t.Fatalf("Match(%q, %q) = %v, reference says %v", pattern, value, got, want)
		}
	})
}

func TestMatchAgreesWithReferenceOnAstralAndInvalidText(t *testing.T) {
	hi, lo := "\xed\xa0\xbd", "\xed\xb8\x80" // lone \ud83d and \ude00
	patterns := []string{"*", "?", "??", "a?", "*?*", "?😀", "😀*", "*\x80", "\xc3*", "é?", "*é", "a*b*c", "* *",
		hi, hi + "*", "*" + lo, "?" + lo, hi + "?", "*" + hi + "*", "a" + hi + "*", "\ufffd*", "* " + hi + " *"}
	values := []string{"", "a", "😀", "a😀", "\xc3\x80", "\xc3", "é", "éé", "abc", "a b", "axbxc", "\x80",
		hi, lo, lo + hi, "a" + hi, "x😀y", "\ufffd", "a " + hi}
	for _, p := range patterns {
		for _, v := range values {
			if got, want := MatchPattern(p, v, ""), refMatch(p, v); got != want {
				t.Errorf("Match(%q, %q) = %v, reference says %v", p, v, got, want)
			}
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	pats := []Pattern{
		CompilePattern("git *", "/home/u"), CompilePattern("*.env.*", "/home/u"),
		CompilePattern("~/dev/*", "/home/u"), CompilePattern("a?b*c", "/home/u"), CompilePattern("*x*y*", "/home/u"),
	}
	values := []string{"git status --short", "/w/p/.env.local", "/home/u/dev/x", "a😀bzzc", "xxxxxxyyyy"}
	allocs := testing.AllocsPerRun(200, func() {
		for _, p := range pats {
			for _, v := range values {
				p.Match(v)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("matching allocated %v times per run", allocs)
	}
}

func TestExpandHome(t *testing.T) {
	cases := map[string]string{
		"~": "/home/u", "$HOME": "/home/u", "${HOME}": "/home/u", "~/": "/home/u", "~//": "/home/u/",
		"~/a/./b/../c/": "/home/u/a/c/", "${HOME}\\x": "/home/u/x", "~user": "~user", "$HOMEDIR/x": "$HOMEDIR/x",
		"${HOME:-x}/y": "${HOME:-x}/y", "x/~/y": "x/~/y", "~/..": "/home",
	}
	for in, want := range cases {
		if got := expandHome(in, "/home/u"); got != want {
			t.Errorf("expandHome(%q) = %q, want %q", in, got, want)
		}
	}
	// A HOME that ends in "/" keeps it where Node's path.join does (node 22:
	// HOME=/home/u/ gives "/home/u/" for join(homedir(), "")).
	for home, want := range map[[2]string]string{
		{"/home/u/", "~/"}: "/home/u/", {"/home/u/", "~"}: "/home/u/", {"/home/u/", "~//"}: "/home/u/",
		{"/home/u/", "~/x"}: "/home/u/x", {"/home/u//", "~/"}: "/home/u/", {"/", "~/"}: "/", {"/", "~/x"}: "/x",
	} {
		if got := expandHome(home[1], home[0]); got != want {
			t.Errorf("HOME=%s: expandHome(%q) = %q, want %q", home[0], home[1], got, want)
		}
	}
	if got := expandHome("~/x", ""); got != "~/x" {
		t.Errorf("with no home, expandHome = %q, want the pattern unchanged", got)
	}
}
