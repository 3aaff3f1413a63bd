package resolve

import (
	"slices"
	"strings"

	"github.com/permtui/permtui/internal/wire"
)

// maxOverlapStates bounds the pairs of pattern positions Overlaps walks;
// beyond it the answer is "they may overlap", so a caller fails closed.
const maxOverlapStates = 1 << 16

// Overlaps reports whether some value matches both patterns, and whether
// the answer is exact: two long patterns are said to overlap, inexactly.
// Each pattern's trailing " *" is tried with and without it, as Match does.
func (p *Pattern) Overlaps(q *Pattern) (overlap, exact bool) {
	exact = true
	for _, a := range p.globs() {
		for _, b := range q.globs() {
			ok, sure := globsOverlap(a, b)
			if ok && sure {
				return true, true
			}
			overlap, exact = overlap || ok, exact && sure
		}
	}
	return overlap, exact
}

// globs are the expressions a value may match: the pattern, and without
// its trailing " *".
func (p *Pattern) globs() []string {
	if p.hasAlt {
		return []string{p.full.expr, p.alt.expr}
	}
	return []string{p.full.expr}
}

// globsOverlap walks the pairs of positions in a and b (as UTF-16 units,
// as the matcher counts '?') that one value can reach; the value exists
// when the pair of ends is reached.
func globsOverlap(a, b string) (overlap, exact bool) {
	ua, ub := units(a), units(b)
	if (len(ua)+1)*(len(ub)+1) > maxOverlapStates {
		return true, false
	}
	n := len(ub) + 1
	seen := make([]bool, (len(ua)+1)*n)
	stack := []int{0}
	seen[0] = true
	push := func(i, j int) {
		if k := i*n + j; !seen[k] {
			seen[k] = true
			stack = append(stack, k)
		}
	}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i, j := k/n, k%n
		if i == len(ua) && j == len(ub) {
			return true, true
		}
		starA, starB := i < len(ua) && ua[i] == '*', j < len(ub) && ub[j] == '*'
		if starA { // the star matches nothing more
			push(i+1, j)
		}
		if starB {
			push(i, j+1)
		}
		// One unit both sides take: a star keeps its place, '?' takes any,
		// a literal only itself.
		if i == len(ua) || j == len(ub) {
			continue
		}
		ni, nj := i+1, j+1
		if starA {
			ni = i
		}
		if starB {
			nj = j
		}
		if starA || starB || ua[i] == '?' || ub[j] == '?' || ua[i] == ub[j] {
			if ni != i || nj != j {
				push(ni, nj)
			}
		}
	}
	return false, true
}

// units is s as the matcher reads it, one UTF-16 unit at a time.
func units(s string) []uint16 {
	var out []uint16
	for pos := (unitPos{}); pos.off < len(s); {
		var u uint16
		u, pos = nextUnit(s, pos)
		out = append(out, u)
	}
	return out
}

// PassedDeny is a deny rule of the policy that a session grant would
// answer before, since a grant beats every config rule (ruleset-semantics
// §8.1, E01). Sure: some value both match, found exactly; otherwise the
// grant may pass it (a surface family, or patterns too long to walk).
type PassedDeny struct {
	Rule RuleRef
	Sure bool
}

// DeniesPassed lists the deny rules, in every agent's view (a grant has
// no agent, §8.1), on a surface g covers, whose pattern shares a value
// with g's: what recording g would allow that the policy denies.
func (p *Policy) DeniesPassed(g wire.Grant) []PassedDeny {
	var out []PassedDeny
	gs, gv := p.grantPattern(g.Surface), p.grantPattern(g.Pattern)
	for _, view := range append([]string{""}, p.Agents()...) {
		for _, r := range p.Rules(view) {
			if r.Action != Deny || slices.ContainsFunc(out, func(o PassedDeny) bool { return sameRule(o.Rule, r) }) {
				continue
			}
			surface, surfaceSure := p.surfacesMeet(g.Surface, gs, r.Surface)
			if !surface {
				continue
			}
			rv := CompilePattern(r.Pattern, p.opts.Home)
			if value, valueSure := gv.Overlaps(&rv); value {
				out = append(out, PassedDeny{Rule: r, Sure: surfaceSure && valueSure})
			}
		}
	}
	return out
}

// surfacesMeet: a grant on gSurface applies to some surface the rule's
// surface pattern names. A rule written on the bare family of a grant's
// member is said to meet it, inexactly.
func (p *Policy) surfacesMeet(gSurface string, gs *Pattern, ruleSurface string) (meet, exact bool) {
	rs := CompilePattern(ruleSurface, p.opts.Home)
	if read, write, family := familyMembers(gSurface); family && (rs.Match(read) || rs.Match(write)) {
		return true, true
	}
	if fam, ok := Family(gSurface); ok && ruleSurface == fam {
		return true, false
	}
	return gs.Overlaps(&rs)
}

func sameRule(a, b RuleRef) bool {
	return a.Surface == b.Surface && a.Pattern == b.Pattern && a.File == b.File && a.Origin == b.Origin
}

// EveryValue: the pattern matches any value at all (only stars).
func EveryValue(pattern string) bool {
	return pattern != "" && strings.Trim(pattern, "*") == ""
}
