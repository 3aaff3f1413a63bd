package policyedit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/permtui/permtui/internal/judgment"
	"github.com/permtui/permtui/internal/resolve"
)

// Loosening is one verdict an edit makes looser (deny → ask or allow, ask →
// allow): in one agent's view, on one surface, for one witness value.
type Loosening struct {
	Agent   string // "" = no agent
	Surface string
	Value   string
	Before  resolve.Verdict
	After   resolve.Verdict
}

// AuthorityDiff judges the policy before and after an edit, as serve would
// (judgment.Verdict, no grants or session denies), in every view pi could use
// (no agent and every agent with a file in either policy) on every surface
// some rule names, every built-in surface, and the witnesses of each
// wildcard surface, over witness values built from the rules' own patterns
// (decision 0140), plus the given facts. It returns every verdict that
// becomes looser, in a stable order.
func AuthorityDiff(before, after *resolve.Policy, facts ...resolve.Query) []Loosening {
	views := slices.Concat([]string{""}, before.Agents(), after.Agents())
	slices.Sort(views)
	views = slices.Compact(views)
	home, project := before.Options().Home, before.Options().ProjectDir

	var refs []resolve.RuleRef
	for _, view := range views {
		refs = append(refs, before.Rules(view)...)
		refs = append(refs, after.Rules(view)...)
	}
	surfaces := newWitnesses()
	var wildSurfaces []string
	for _, s := range resolve.BuiltinSurfaces() {
		surfaces.add(s)
	}
	for _, r := range refs {
		p := resolve.CompilePattern(r.Surface, home)
		if e := p.Expanded(); strings.ContainsAny(e, "*?") {
			wildSurfaces = append(wildSurfaces, e)
		} else {
			surfaces.add(e)
		}
	}
	surfaces.globs(wildSurfaces)
	for _, q := range facts {
		surfaces.add(q.Surface)
	}

	var out []Loosening
	judge := func(p *resolve.Policy, q resolve.Query) resolve.Verdict {
		return judgment.Verdict(p, judgment.FactsRequest(q), nil, nil)
	}
	// compare reports whether the edit changed q's verdict at all.
	compare := func(q resolve.Query) bool {
		b, a := judge(before, q), judge(after, q)
		if resolve.Restrictiveness(a.Action) < resolve.Restrictiveness(b.Action) {
			out = append(out, Loosening{Agent: q.Agent, Surface: q.Surface, Value: strings.Join(q.Values, " | "), Before: b, After: a})
		}
		return a.Action != b.Action || ruleKey(a.Rule) != ruleKey(b.Rule)
	}
	for _, s := range surfaces.list {
		values := []string{"*"}
		if resolve.ValueSurface(s) {
			values = valueWitnesses(s, refs, home)
		}
		for _, view := range views {
			var changed []string
			for _, v := range values {
				if compare(resolve.Query{Agent: view, Surface: s, Values: []string{v}}) {
					changed = append(changed, v)
				}
			}
			// A path comes with its aliases, and the highest rule matching
			// any of them decides: a value the new rule now decides,
			// judged beside another, can pass a deny of the other's. A path
			// in the project comes with its project-relative alias, so that
			// pair is judged for every witness, whether or not either value
			// alone changed: a rule that only moved re-orders the two.
			if resolve.AliasSurface(s) {
				for _, v := range values {
					if pair, ok := projectAliases(v, project); ok && s != "mcp" {
						compare(resolve.Query{Agent: view, Surface: s, Values: pair})
					}
				}
				for _, c := range changed {
					for _, v := range values {
						if v != c {
							compare(resolve.Query{Agent: view, Surface: s, Values: []string{v, c}})
						}
					}
				}
			}
		}
	}
	for _, q := range facts {
		compare(q)
	}
	return out
}

// valueWitnesses are the values to judge surface s by: the witnesses of
// every pattern of a rule whose surface pattern matches s (its home token
// expanded, as pi matches it), of each pair of them, and for mcp the
// baseline's tool names.
func valueWitnesses(s string, refs []resolve.RuleRef, home string) []string {
	w := newWitnesses()
	var globs []string
	seen := map[string]bool{}
	for _, r := range refs {
		sp := resolve.CompilePattern(r.Surface, home)
		if !sp.Match(s) || seen[r.Pattern] {
			continue
		}
		seen[r.Pattern] = true
		vp := resolve.CompilePattern(r.Pattern, home)
		e := vp.Expanded()
		globs = append(globs, e)
		// A pattern ending in " *" also matches without it.
		if alt, ok := strings.CutSuffix(e, " *"); ok {
			globs = append(globs, alt)
		}
	}
	w.globs(globs)
	if s == "mcp" {
		for _, name := range resolve.MCPBaseline() {
			w.add(name)
		}
	}
	return w.list
}

// projectAliases pairs a witness path with its alias as pi's caller
// forms it for a path in the project: the absolute path, then the
// project-relative one. Neither side may be empty or the project itself.
func projectAliases(v, project string) ([]string, bool) {
	if project == "" || v == "" {
		return nil, false
	}
	if rel, ok := strings.CutPrefix(v, strings.TrimSuffix(project, "/")+"/"); ok {
		return []string{v, rel}, rel != ""
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") {
		return nil, false
	}
	return []string{strings.TrimSuffix(project, "/") + "/" + v, v}, true
}

// witnesses is an ordered set of values.
type witnesses struct {
	list []string
	seen map[string]bool
}

func newWitnesses() *witnesses { return &witnesses{seen: map[string]bool{}} }

func (w *witnesses) add(v string) {
	if !w.seen[v] {
		w.seen[v] = true
		w.list = append(w.list, v)
	}
}

// globs adds each glob's own witnesses (every * as nothing and as one
// character, every ? as one character) and one in the overlap of each pair.
func (w *witnesses) globs(globs []string) {
	for _, g := range globs {
		w.add(fill(g, "x"))
		w.add(fill(g, ""))
	}
	for i, a := range globs {
		for _, b := range globs[i+1:] {
			if v, ok := overlap(a, b); ok {
				w.add(v)
			}
		}
	}
}

// fill is g with every * replaced by star and every ? by one character.
func fill(g, star string) string {
	return strings.NewReplacer("*", star, "?", "x").Replace(g)
}

// overlap builds a value both globs match when both have a * (a glob
// without one is its own witness): with ? read as one character, each glob
// is prefix * middle * suffix; the two match a common value exactly when
// one prefix begins the other and one suffix ends the other, and then the
// longer prefix, both middles' literal runs and the longer suffix is such a
// value, since each glob finds its own runs in order between them.
func overlap(a, b string) (string, bool) {
	pa, ma, sa, okA := splitGlob(fill(a, "*"))
	pb, mb, sb, okB := splitGlob(fill(b, "*"))
	if !okA || !okB {
		return "", false
	}
	prefix, ok := longer(pa, pb, strings.HasPrefix)
	if !ok {
		return "", false
	}
	suffix, ok := longer(sa, sb, strings.HasSuffix)
	if !ok {
		return "", false
	}
	return prefix + strings.ReplaceAll(ma, "*", "") + strings.ReplaceAll(mb, "*", "") + suffix, true
}

// splitGlob cuts g at its first and last *.
func splitGlob(g string) (prefix, middle, suffix string, ok bool) {
	first, last := strings.IndexByte(g, '*'), strings.LastIndexByte(g, '*')
	if first < 0 {
		return "", "", "", false
	}
	return g[:first], g[first+1 : max(first+1, last)], g[last+1:], true
}

// longer returns the longer of a and b when it extends the other (as
// has says), else false.
func longer(a, b string, has func(s, part string) bool) (string, bool) {
	switch {
	case has(a, b):
		return a, true
	case has(b, a):
		return b, true
	}
	return "", false
}

// Unnamed drops the loosenings a person named by writing rules: an ask
// that one of rules, written to file, now allows on a value its own pattern
// matches. A deny passed, and anything decided by another rule (a state
// string spelled out, the MCP baseline switched on, a "*" that now shows
// through), stays.
func Unnamed(ls []Loosening, file string, rules ...Rule) []Loosening {
	var out []Loosening
	for _, l := range ls {
		named := l.Before.Action == resolve.Ask && slices.ContainsFunc(rules, func(r Rule) bool { return isRule(l.After.Rule, file, r) })
		if !named {
			out = append(out, l)
		}
	}
	return out
}

// isRule: ref is rule r as written to file.
func isRule(ref *resolve.RuleRef, file string, r Rule) bool {
	return ref != nil && ref.File == file && ref.Pattern == r.Pattern && ref.Action == r.Action && sameSurface(ref.Surface, r.Surface)
}

// LooseningGroup is the loosenings that share the rule that decided before,
// the rule that decides after, and the surface: one line for a person.
type LooseningGroup struct {
	First Loosening // the first witness, in the first view
	Views []string  // every view it loosens in ("" = no agent)
	Count int       // witnesses in all
}

// Group gathers loosenings by (old rule, new rule, surface), in order.
func Group(ls []Loosening) []LooseningGroup {
	var out []LooseningGroup
	idx := map[string]int{}
	for _, l := range ls {
		key := ruleKey(l.Before.Rule) + "\x00" + ruleKey(l.After.Rule) + "\x00" + l.Surface + "\x00" + string(l.Before.Action) + string(l.After.Action)
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, LooseningGroup{First: l})
		}
		g := &out[i]
		g.Count++
		if !slices.Contains(g.Views, l.Agent) {
			g.Views = append(g.Views, l.Agent)
		}
	}
	return out
}

func ruleKey(r *resolve.RuleRef) string {
	if r == nil {
		return "-"
	}
	return strings.Join([]string{r.Surface, r.Pattern, string(r.Action), r.Origin, r.File}, "\x00")
}

// String says the group in one line: view, surface, witness, old and new
// deciding rule.
func (g LooseningGroup) String() string {
	l := g.First
	var views []string
	for _, v := range g.Views {
		if v == "" {
			views = append(views, "no agent")
		} else {
			views = append(views, "agent "+strconv.Quote(v))
		}
	}
	s := fmt.Sprintf("%s %q: %s → %s for %s (was %s; now %s)", strconv.Quote(l.Surface), l.Value,
		l.Before.Action, l.After.Action, strings.Join(views, ", "), DescribeRule(l.Before.Rule), DescribeRule(l.After.Rule))
	if g.Count > 1 {
		s += fmt.Sprintf("; %d witness values in all", g.Count)
	}
	return s
}

// DescribeRule names a deciding rule and where it is written.
func DescribeRule(r *resolve.RuleRef) string {
	if r == nil {
		return "no rule"
	}
	s := fmt.Sprintf("%s %q → %s (%s", strconv.Quote(r.Surface), r.Pattern, r.Action, r.Origin)
	if r.File != "" {
		s += " " + r.File
	}
	return s + ")"
}
