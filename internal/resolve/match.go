package resolve

import (
	"path"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/wire"
)

// Pattern is a compiled pi wildcard pattern (ruleset-semantics §5): `*` (and
// `**`) match any run of UTF-16 code units including `/` and newlines, `?`
// exactly one unit, everything else is literal; anchored and case-sensitive.
// A pattern ending in " *" also matches with that suffix removed. A leading
// home token (~, $HOME, ${HOME}) is expanded on the pattern side only.
type Pattern struct {
	full   glob
	alt    glob // full without its trailing " *"
	hasAlt bool
}

// glob is one anchored wildcard expression, pre-split into its literal prefix
// and suffix (checked as plain bytes) and the wildcard middle.
type glob struct {
	expr     string
	prefix   string // literal text before the first wildcard
	suffix   string // literal text after the last wildcard
	mid      string // expr without prefix and suffix; starts and ends with a wildcard
	literal  bool   // no wildcard at all: plain equality
	anyMid   bool   // mid is only stars: prefix and suffix decide
	byUnits  bool   // mid holds '?': match UTF-16 units, not bytes
	minBytes int
	// segments are the literal runs between the stars of a mid without '?',
	// found leftmost-first, which is exact for a glob of stars and literals.
	// Literals are valid UTF-8, so byte-wise matches line up with character
	// boundaries and agree with matching over UTF-16 units.
	segments []string
}

// CompilePattern expands a leading home token against home (nothing is
// expanded when home is "") and prepares the pattern for matching.
func CompilePattern(text, home string) Pattern {
	// Only what a JavaScript string can hold: valid UTF-8 and lone
	// surrogates, which compileGlob matches by unit.
	expanded := expandHome(wire.ToValidWTF8(text), home)
	p := Pattern{full: compileGlob(expanded)}
	if n := len(expanded); n >= 2 && expanded[n-1] == '*' && expanded[n-2] == ' ' {
		p.alt, p.hasAlt = compileGlob(expanded[:n-2]), true
	}
	return p
}

// Expanded is the pattern as matched: its home token expanded.
func (p *Pattern) Expanded() string { return p.full.expr }

// Match reports whether the whole value matches. It never allocates.
func (p *Pattern) Match(value string) bool {
	return p.full.match(value) || (p.hasAlt && p.alt.match(value))
}

func compileGlob(expr string) glob {
	first := strings.IndexAny(expr, "*?")
	if first < 0 {
		return glob{expr: expr, literal: true}
	}
	if wire.HasSurrogate(expr) {
		// A lone surrogate can match half of a value's astral character,
		// which its bytes cannot: the whole pattern is matched by unit.
		return glob{expr: expr, mid: expr, byUnits: true}
	}
	last := strings.LastIndexAny(expr, "*?")
	g := glob{expr: expr, prefix: expr[:first], suffix: expr[last+1:], mid: expr[first : last+1]}
	g.minBytes = len(g.prefix) + len(g.suffix)
	g.anyMid = strings.Trim(g.mid, "*") == ""
	g.byUnits = strings.IndexByte(g.mid, '?') >= 0
	if !g.byUnits {
		g.segments = strings.FieldsFunc(g.mid, func(r rune) bool { return r == '*' })
	}
	return g
}

func (g *glob) match(v string) bool {
	if g.literal {
		return v == g.expr
	}
	if len(v) < g.minBytes || !strings.HasPrefix(v, g.prefix) || !strings.HasSuffix(v, g.suffix) {
		return false
	}
	if g.anyMid {
		return true
	}
	rest := v[len(g.prefix) : len(v)-len(g.suffix)]
	if g.byUnits {
		return globUnits(g.mid, rest)
	}
	for _, seg := range g.segments {
		i := strings.Index(rest, seg)
		if i < 0 {
			return false
		}
		rest = rest[i+len(seg):]
	}
	return true
}

// unitPos is a position in a string viewed as UTF-16 code units: a byte
// offset, plus whether we stand on the low half of an astral character.
type unitPos struct {
	off int
	low bool
}

// nextUnit decodes the UTF-16 unit at pos without allocating: a lone
// surrogate's WTF-8 form is that surrogate. Any other byte of invalid UTF-8
// (only in a value from outside pi: wire and the parsers replace them)
// becomes its own unit 0xDC00|byte, matching the same byte as byte-wise
// matching does, and also a lone \udc80..\udcff.
func nextUnit(s string, pos unitPos) (uint16, unitPos) {
	if u, ok := wire.SurrogateAt(s[pos.off:]); ok {
		return u, unitPos{off: pos.off + 3}
	}
	r, size := utf8.DecodeRuneInString(s[pos.off:])
	if r == utf8.RuneError && size == 1 {
		return 0xDC00 | uint16(s[pos.off]), unitPos{off: pos.off + 1}
	}
	if r < 0x10000 {
		return uint16(r), unitPos{off: pos.off + size}
	}
	hi, lo := utf16.EncodeRune(r)
	if !pos.low {
		return uint16(hi), unitPos{off: pos.off, low: true}
	}
	return uint16(lo), unitPos{off: pos.off + size}
}

// globUnits is the iterative backtracking glob over UTF-16 units, so '?'
// consumes half of an astral character exactly as a JavaScript RegExp
// without the u flag does.
func globUnits(p, v string) bool {
	var px, vx, starP, starV unitPos
	star := false
	for vx.off < len(v) || px.off < len(p) {
		if px.off < len(p) {
			c, pNext := nextUnit(p, px)
			if c == '*' {
				star, starP, starV = true, pNext, vx
				px = pNext
				continue
			}
			if vx.off < len(v) {
				d, vNext := nextUnit(v, vx)
				if c == '?' || c == d {
					px, vx = pNext, vNext
					continue
				}
			}
		}
		if star && starV.off < len(v) {
			_, starV = nextUnit(v, starV)
			px, vx = starP, starV
			continue
		}
		return false
	}
	return true
}

// homeTokens are the leading home spellings (NEW adds ${HOME}).
var homeTokens = [...]string{"~", "$HOME", "${HOME}"}

// HomeRelative: the pattern starts with a home token pi expands, so what
// it matches depends on the home directory.
func HomeRelative(pattern string) bool { return expandHome(pattern, "/") != pattern }

// expandHome replaces a leading home token that stands alone (by home as it
// is) or is followed by a separator (by Node's path.join(home, rest)).
// ~user, $HOMEDIR and ${HOME:-x} stay literal.
func expandHome(p, home string) string {
	if home == "" {
		return p
	}
	for _, tok := range homeTokens {
		if p == tok {
			return home
		}
		if len(p) > len(tok) && strings.HasPrefix(p, tok) && (p[len(tok)] == '/' || p[len(tok)] == '\\') {
			return nodeJoin(home, p[len(tok)+1:])
		}
	}
	return p
}

// nodeJoin is Node's POSIX path.join(home, rest): the non-empty parts joined
// by "/" and normalised, a trailing separator kept, so a HOME of "/home/u/"
// makes "~/" "/home/u/" (path.Clean would drop it).
func nodeJoin(home, rest string) string {
	joined := home
	if rest != "" {
		joined += "/" + rest
	}
	clean := path.Clean(joined)
	if strings.HasSuffix(joined, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}
