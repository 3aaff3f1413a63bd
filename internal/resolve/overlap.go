package resolve

import (
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
func (p *Pattern) globs() []*glob {
	if p.hasAlt {
		return []*glob{&p.full, &p.alt}
	}
	return []*glob{&p.full}
}

// ends are the literal text a glob's values start and end with.
func (g *glob) ends() (prefix, suffix string) {
	if g.literal {
		return g.expr, g.expr
	}
	return g.prefix, g.suffix
}

// globsOverlap walks the pairs of positions in a and b (as UTF-16 units,
// as the matcher counts '?') that one value can reach; the value exists
// when the pair of ends is reached. Literal ends that disagree settle it
// first, without the walk.
func globsOverlap(ga, gb *glob) (overlap, exact bool) {
	pa, sa := ga.ends()
	pb, sb := gb.ends()
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) || !strings.HasSuffix(sa, sb) && !strings.HasSuffix(sb, sa) {
		return false, true
	}
	ua, ub := units(ga.expr), units(gb.expr)
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
	type key struct{ surface, pattern, file, origin string }
	seen := map[key]bool{} // a shared file's rule is in every view
	for _, view := range append([]string{""}, p.Agents()...) {
		for i := range p.rulesetFor(view).rules {
			r := &p.rulesetFor(view).rules[i]
			k := key{r.ref.Surface, r.ref.Pattern, r.ref.File, r.ref.Origin}
			if r.ref.Action != Deny || seen[k] {
				continue
			}
			seen[k] = true
			surface, surfaceSure := p.surfacesMeet(g.Surface, gs, r)
			if !surface {
				continue
			}
			if value, valueSure := gv.Overlaps(&r.value); value {
				out = append(out, PassedDeny{Rule: r.ref, Sure: surfaceSure && valueSure})
			}
		}
	}
	return out
}

// surfacesMeet: a grant on gSurface applies to some surface rule r's
// surface pattern names. A rule written on the bare family of a grant's
// member is said to meet it, inexactly.
func (p *Policy) surfacesMeet(gSurface string, gs *Pattern, r *rule) (meet, exact bool) {
	if read, write, family := familyMembers(gSurface); family && (r.surface.Match(read) || r.surface.Match(write)) {
		return true, true
	}
	if fam, ok := Family(gSurface); ok && r.ref.Surface == fam {
		return true, false
	}
	return gs.Overlaps(&r.surface)
}

// EveryValue: the pattern matches any value at all (only stars).
func EveryValue(pattern string) bool {
	return pattern != "" && strings.Trim(pattern, "*") == ""
}
