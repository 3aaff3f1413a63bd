package policyedit

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

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
	// Trusted: seen only with the untrusted project's files read, as pi
	// reads them once it is trusted.
	Trusted bool
}

// Loosenings is AuthorityDiff of the policy before and after an edit (the
// same options but the edited file). When the project is not trusted (left
// out, or its allows held), both are loaded again as if it were: every view
// pi could use, trusted or not.
func Loosenings(before, after *resolve.Policy, facts ...resolve.Query) ([]Loosening, error) {
	out, err := AuthorityDiff(before, after, facts...)
	opts, cand := before.Options(), after.Options()
	// Read and trusted, or held with no project file on either side: pi
	// trusting the project would judge as these did.
	asTrusted := opts.TrustProject && (!opts.HoldProjectAllows || before.WithoutProject() == nil && after.WithoutProject() == nil)
	if err != nil || asTrusted || opts.ProjectDir == "" {
		return out, err
	}
	opts.TrustProject, cand.TrustProject = true, true
	opts.HoldProjectAllows, cand.HoldProjectAllows = false, false
	trusted := resolve.Load(opts)
	if prs := trusted.Problems(); len(prs) > 0 {
		return nil, fmt.Errorf("%s, which pi reads once the project is trusted, cannot be used (%s): until it is fixed permtui cannot tell what a rule would loosen; fix it first", prs[0].File, prs[0].Message)
	}
	more, err := AuthorityDiff(trusted, resolve.Load(cand), facts...)
	if err != nil {
		return nil, err
	}
	for _, l := range more {
		if !slices.ContainsFunc(out, func(o Loosening) bool { return o.key() == l.key() }) {
			l.Trusted = true
			out = append(out, l)
		}
	}
	return out, nil
}

// key identifies a loosening: view, surface, value and both verdicts.
func (l Loosening) key() string {
	return strings.Join([]string{l.Agent, l.Surface, l.Value, string(l.Before.Action), ruleKey(l.Before.Rule), string(l.After.Action), ruleKey(l.After.Rule)}, "\x00")
}

// AuthorityDiff judges the policy before and after an edit, as serve would
// (judgment.Verdict, no grants or session denies), in every view pi could use
// (no agent and every agent with a file in either policy) on every surface
// some rule names, every built-in surface, and the witnesses of each
// wildcard surface, over witness values built from the rules' own patterns
// (decision 0140), plus the given facts. It returns every verdict that
// becomes looser, in a stable order, or an error when the patterns of a
// surface cut more regions than it searches: then it cannot tell.
func AuthorityDiff(before, after *resolve.Policy, facts ...resolve.Query) ([]Loosening, error) {
	views := slices.Concat([]string{""}, before.Agents(), after.Agents())
	slices.Sort(views)
	views = slices.Compact(views)
	home, project := before.Options().Home, before.Options().ProjectDir

	var refs []resolve.RuleRef
	for _, view := range views {
		refs = append(refs, before.Rules(view)...)
		refs = append(refs, after.Rules(view)...)
	}
	surfaces, err := surfaceWitnesses(refs, home)
	if err != nil {
		return nil, err
	}
	for _, q := range facts {
		surfaces.add(q.Surface)
	}
	d := &diffJudge{before: before, after: after}
	for _, s := range surfaces.list {
		values := []string{"*"}
		if resolve.ValueSurface(s) {
			w := valueWitnesses(s, refs, home)
			if w.unfinished {
				return nil, fmt.Errorf("the patterns on %s cut more regions than permtui searches (%d states); it cannot tell what the edit loosens there", strconv.Quote(s), maxRegionStates)
			}
			values = w.list
		}
		for _, view := range views {
			d.compareView(view, s, values, project)
		}
	}
	for _, q := range facts {
		d.compare(q)
	}
	return d.out, nil
}

// surfaceWitnesses are the surfaces to judge: every built-in surface, every
// literal surface a rule names, and the witnesses of the wildcard ones.
func surfaceWitnesses(refs []resolve.RuleRef, home string) (*witnesses, error) {
	surfaces := newWitnesses()
	var wildSurfaces []string
	surfaces.add(resolve.BuiltinSurfaces()...)
	for _, r := range refs {
		p := resolve.CompilePattern(r.Surface, home)
		if e := p.Expanded(); strings.ContainsAny(e, "*?") {
			wildSurfaces = append(wildSurfaces, e)
		} else {
			surfaces.add(e)
		}
	}
	surfaces.globs(wildSurfaces, false)
	if surfaces.unfinished {
		return nil, fmt.Errorf("the rules' surface patterns cut more regions than permtui searches (%d states); it cannot tell what the edit loosens", maxRegionStates)
	}
	return surfaces, nil
}

// diffJudge judges queries before and after an edit and keeps those whose
// verdict became looser.
type diffJudge struct {
	before, after *resolve.Policy
	out           []Loosening
}

// compare records q when its verdict loosened, and reports whether the edit
// changed q's verdict at all.
func (d *diffJudge) compare(q resolve.Query) bool {
	b := judgment.Verdict(d.before, judgment.FactsRequest(q), nil, nil)
	a := judgment.Verdict(d.after, judgment.FactsRequest(q), nil, nil)
	if resolve.Restrictiveness(a.Action) < resolve.Restrictiveness(b.Action) {
		d.out = append(d.out, Loosening{Agent: q.Agent, Surface: q.Surface, Value: strings.Join(q.Values, " | "), Before: b, After: a})
	}
	return a.Action != b.Action || ruleKey(a.Rule) != ruleKey(b.Rule)
}

// compareView judges each witness value of surface s in one view, then the
// pairs of values a path is judged with.
func (d *diffJudge) compareView(view, s string, values []string, project string) {
	var changed []string
	for _, v := range values {
		if d.compare(resolve.Query{Agent: view, Surface: s, Values: []string{v}}) {
			changed = append(changed, v)
		}
	}
	if !resolve.AliasSurface(s) {
		return
	}
	// A path comes with its aliases, and the highest rule matching any of
	// them decides: a value the new rule now decides, judged beside
	// another, can pass a deny of the other's. A path in the project comes
	// with its project-relative alias, so that pair is judged for every
	// witness, whether or not either value alone changed: a rule that only
	// moved re-orders the two.
	for _, v := range values {
		if pair, ok := projectAliases(v, project); ok && s != "mcp" {
			d.compare(resolve.Query{Agent: view, Surface: s, Values: pair})
		}
	}
	for _, c := range changed {
		for _, v := range values {
			if v != c {
				d.compare(resolve.Query{Agent: view, Surface: s, Values: []string{v, c}})
			}
		}
	}
}

// valueWitnesses are the values to judge surface s by: the witnesses of
// every pattern of a rule whose surface pattern matches s (its home token
// expanded, as pi matches it), of each pair of them, and for mcp the
// baseline's tool names.
func valueWitnesses(s string, refs []resolve.RuleRef, home string) *witnesses {
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
	w.globs(globs, s == "bash")
	if s == "bash" {
		// pi matches a bash command trimmed unless only spaces remain: a
		// glob of spaces and wildcards gets its all-space values.
		for _, g := range globs {
			if strings.Trim(g, "*? \t") == "" {
				w.add(strings.NewReplacer("*", "", "?", " ").Replace(g))
				w.add(strings.NewReplacer("*", " ", "?", " ").Replace(g))
			}
		}
	}
	if s == "mcp" {
		w.add(resolve.MCPBaseline()...)
	}
	return w
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

// witnesses is an ordered set of values; unfinished when a region search
// was cut off.
type witnesses struct {
	list       []string
	seen       map[string]bool
	unfinished bool
}

func newWitnesses() *witnesses { return &witnesses{seen: map[string]bool{}} }

func (w *witnesses) add(vs ...string) {
	for _, v := range vs {
		if !w.seen[v] {
			w.seen[v] = true
			w.list = append(w.list, v)
		}
	}
}

// globs adds each glob's own witnesses (every * as nothing and as one
// character, every ? as one character) and a value of every region the
// globs cut (regions; trimmed: values pi trims before matching).
func (w *witnesses) globs(globs []string, trimmed bool) {
	for _, g := range globs {
		w.add(fill(g, "x"), fill(g, ""))
	}
	vs, done := regions(globs, trimmed)
	w.unfinished = w.unfinished || !done
	w.add(vs...)
}

// fill is g with every * replaced by star and every ? by one character.
func fill(g, star string) string {
	return strings.NewReplacer("*", star, "?", "x").Replace(g)
}

// maxRegionStates bounds the search of regions: a policy's patterns are
// short and few, and reach a few hundred states (decision 0140).
const maxRegionStates = 20000

// regions returns, for every set of globs (* any run, ? one character)
// that some value matches exactly — matched by those and no other — the
// shortest such value, and whether the search finished. It walks
// breadth-first the states the globs can be in together after each
// character (a bit per position of each glob); a character is one some
// glob names, or one none does, so every set that a value reaches is
// reached. trimmed: values are matched trimmed (bash), so a region value
// neither starts nor ends with a space (whether the last character was one
// is part of the state). A glob longer than 63 runes is left to its own
// witnesses.
func regions(globs []string, trimmed bool) ([]string, bool) {
	var gs [][]rune
	for _, g := range globs {
		if r := []rune(g); len(r) < 64 {
			gs = append(gs, r)
		}
	}
	chars := regionAlphabet(gs)
	type node struct {
		masks []uint64
		prev  int
		c     rune
	}
	edge := func(c rune) bool { return trimmed && unicode.IsSpace(c) }
	key := func(masks []uint64, c rune) string {
		b := make([]byte, 0, 8*len(masks)+1)
		for _, m := range masks {
			b = binary.LittleEndian.AppendUint64(b, m)
		}
		if edge(c) {
			b = append(b, 1)
		}
		return string(b)
	}
	start := make([]uint64, len(gs))
	for i, g := range gs {
		start[i] = closeStars(g, 1)
	}
	nodes := []node{{masks: start, prev: -1}}
	seen := map[string]bool{key(start, 0): true}
	sigs := map[string]bool{}
	var out []string
	for k := 0; k < len(nodes); k++ {
		n := nodes[k]
		sig := make([]byte, len(gs))
		for i, g := range gs {
			if n.masks[i]&(1<<len(g)) != 0 {
				sig[i] = 1
			}
		}
		if !sigs[string(sig)] && (k == 0 || !edge(n.c)) {
			sigs[string(sig)] = true
			var v []rune
			for j := k; nodes[j].prev >= 0; j = nodes[j].prev {
				v = append(v, nodes[j].c)
			}
			slices.Reverse(v)
			out = append(out, string(v))
		}
		for _, c := range chars {
			if k == 0 && edge(c) {
				continue
			}
			next := make([]uint64, len(gs))
			alive := false
			for i, g := range gs {
				next[i] = step(g, n.masks[i], c)
				alive = alive || next[i] != 0
			}
			if kn := key(next, c); alive && !seen[kn] {
				if len(nodes) == maxRegionStates {
					return out, false
				}
				seen[kn] = true
				nodes = append(nodes, node{masks: next, prev: k, c: c})
			}
		}
	}
	return out, true
}

// regionAlphabet is every character some glob names, and one none does.
func regionAlphabet(gs [][]rune) []rune {
	var chars []rune
	for _, g := range gs {
		for _, c := range g {
			if c != '*' && c != '?' && !slices.Contains(chars, c) {
				chars = append(chars, c)
			}
		}
	}
	for _, c := range "xyzq_0" {
		if !slices.Contains(chars, c) {
			chars = append(chars, c)
			break
		}
	}
	return chars
}

// step is the positions glob g can be at after c from those in mask (bit
// i: before g[i]; bit len(g): at the end).
func step(g []rune, mask uint64, c rune) uint64 {
	var next uint64
	for i, gc := range g {
		if mask&(1<<i) == 0 {
			continue
		}
		switch {
		case gc == '*':
			next |= 1 << i
		case gc == '?' || gc == c:
			next |= 1 << (i + 1)
		}
	}
	return closeStars(g, next)
}

// closeStars adds to mask every position past a * it can skip.
func closeStars(g []rune, mask uint64) uint64 {
	for i, gc := range g {
		if gc == '*' && mask&(1<<i) != 0 {
			mask |= 1 << (i + 1)
		}
	}
	return mask
}

// Unnamed drops the loosenings a person named by writing rules: an ask
// that one of rules, written to file, now allows on a value its own pattern
// matches. A deny passed, and anything decided by another rule (a state
// string spelled out, the MCP baseline switched on, a "*" that now shows
// through), stays.
func Unnamed(ls []Loosening, file string, rules ...Rule) []Loosening {
	return slices.DeleteFunc(slices.Clone(ls), func(l Loosening) bool {
		return l.Before.Action == resolve.Ask && slices.ContainsFunc(rules, func(r Rule) bool { return isRule(l.After.Rule, file, r) })
	})
}

// isRule: ref is rule r as written to file. A rule on a bare family (path)
// is composed into its two directional members, either of which may be ref.
func isRule(ref *resolve.RuleRef, file string, r Rule) bool {
	if ref == nil || ref.File != file || ref.Pattern != r.Pattern || ref.Action != r.Action {
		return false
	}
	fam, _ := resolve.Family(ref.Surface)
	return ref.Surface == r.Surface || fam == r.Surface
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
		key := ruleKey(l.Before.Rule) + "\x00" + ruleKey(l.After.Rule) + "\x00" + l.Surface + "\x00" + string(l.Before.Action) + string(l.After.Action) + strconv.FormatBool(l.Trusted)
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
			views = append(views, "the main agent and any agent without its own file")
		} else {
			views = append(views, "agent "+strconv.Quote(v))
		}
	}
	s := fmt.Sprintf("%s %q: %s → %s for %s (was %s; now %s)", strconv.Quote(l.Surface), l.Value,
		l.Before.Action, l.After.Action, strings.Join(views, ", "), DescribeVerdict(l.Before), DescribeVerdict(l.After))
	if l.Trusted {
		s += ", once the project is trusted"
	}
	if g.Count > 1 {
		s += fmt.Sprintf("; %d witness values in all", g.Count)
	}
	return s
}

// DescribeVerdict names the rule that decided v and where it is written,
// and yoloMode when it, not the rule's action, made v allow.
func DescribeVerdict(v resolve.Verdict) string {
	s := DescribeRule(v.Rule)
	switch {
	case v.Yolo != "" && v.Floor != "":
		s += fmt.Sprintf(", kept allow past the floor %q by %s", v.Floor, v.Yolo)
	case v.Yolo != "":
		s += ", turned allow by " + v.Yolo
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
