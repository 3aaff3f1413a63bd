package resolve

import (
	"maps"
	"slices"
	"strings"
)

// builtinSurfaces are the surfaces pi's gates forward without any config
// naming them (§3, §6.4).
var builtinSurfaces = []string{
	"bash", "skill", "mcp",
	"read", "write", "edit", "find", "grep", "ls",
	"path", "external_directory",
	"path_read", "path_write", "external_directory_read", "external_directory_write",
}

// BuiltinSurfaces lists the surfaces pi forwards without any config naming them.
func BuiltinSurfaces() []string { return slices.Clone(builtinSurfaces) }

// KnownSurface reports whether surface is a built-in surface or one that a
// rule of this policy names literally (an extension tool such as "task").
func (p *Policy) KnownSurface(surface string) bool {
	return slices.Contains(builtinSurfaces, surface) || slices.Contains(p.namedSurfaces(), surface)
}

// NearestSurface suggests the known surface closest to a mistyped one, or ""
// when none is close enough to be a likely typo.
func (p *Policy) NearestSurface(surface string) string {
	best, bestDist := "", len(surface)/3+1
	for _, known := range append(slices.Clone(builtinSurfaces), p.namedSurfaces()...) {
		if d := editDistance(strings.ToLower(surface), known); d <= bestDist && (best == "" || d < bestDist) {
			best, bestDist = known, d
		}
	}
	return best
}

// namedSurfaces lists the plain (wildcard-free) surface names of every rule.
func (p *Policy) namedSurfaces() []string {
	var names []string
	for _, rs := range slices.AppendSeq([]*ruleset{p.base, p.unlisted}, maps.Values(p.agents)) {
		if rs != nil { // unlisted is nil while every agents directory could be listed
			names = slices.AppendSeq(names, maps.Keys(rs.bySurface))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (surface names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
