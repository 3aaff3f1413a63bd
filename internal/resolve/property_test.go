package resolve

// The differential property test: random policies (configs with pattern
// maps, integer-like keys, special characters, invalid UTF-8 and lone
// surrogates, agent files with quirky frontmatter, project files with a
// config.local.json and a legacy pi-permissions.jsonc, yolo, HOME variants,
// several alias values, padded surfaces) and random queries, checked
// against invariants that need no pi:
//
//   - parsing is total: loading and judging never panic, also on mangled files;
//   - an explanation names the deciding rule and carries no control character;
//   - the rule index agrees with a full scan done with the reference matcher;
//   - a stricter file (some allow → ask/deny, some ask → deny) never allows
//     more;
//   - comments, blank lines and whitespace between tokens change nothing;
//   - a legacy project file never allows more (it only turns yolo off).
//
// The pools are seeded from the ruleset vectors, whose policies are
// also checked. PERMTUI_PROPERTY_CASES sets the number of random policies
// (default 150, `task property` runs many more); PERMTUI_PROPERTY_SEED the
// seed (default 1).

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

type genEntry struct {
	pat, state string
	reason     *string // a deny object
}

type genSurface struct {
	key, state string // state: when the value is a string
	entries    []genEntry
	isMap      bool
}

type genConfig struct {
	perms   []genSurface
	knobs   []string // `"key":value`
	yolo    string   // "", "true" or "false"
	comment bool
}

type genAgent struct {
	name     string
	perms    []genSurface
	raw      string // a vector's agent file, used as it is
	indent   int
	quote    string
	crlf     bool
	comments bool
}

type genPolicy struct {
	global, project, local *genConfig
	legacy                 *genConfig // <cwd>/.pi/agent/pi-permissions.jsonc
	home                   string
	agents, projectAgents  []genAgent
	grants                 []wire.Grant
}

// pools of surfaces, patterns and values, seeded from the vectors.
type pools struct {
	surfaces, patterns, values, agentFiles []string
}

var (
	baseSurfaces = []string{"bash", "skill", "read", "write", "edit", "find", "grep", "ls", "path", "path_read", "path_write",
		"external_directory", "external_directory_read", "external_directory_write", "mcp", "task", "*", "mcp__srv__tool",
		"mcp__*", " bash", "Bash", "0", "1", "10", "__proto__", "b?sh", "ba*", "skill\t", "mcp ", "\u3000mcp", "bash\u00a0"}
	basePatterns = []string{"*", "**", "?", "?*", "git *", "git status", "rm *", "/tmp/*", "~/x/*", "$HOME/y", "0", "1", "2", "10",
		"01", "4294967294", "4294967295", "__proto__", "a b *", "😀", "??", "a\xff\xfeb", "a\xe2\x82b", "x:y", "'q'", "\"dq\"",
		" lead", "trail ", "tab\tin", "line\nbreak", "\u2028", "é*", "* *", "mcp_list", "sudo *", "nohup mytool *", "#c",
		loneHigh + "*", "*" + loneLow, "?" + loneLow, loneHigh, "\ufffd", "~/", "$HOME/*", "mcp_status"}
	baseValues = []string{"git status", "git status --short", "rm -rf /", "ls", "", "*", "/tmp/a", "/home/u/x/y", "~/x/y", "0",
		"10", "__proto__", "a b", "a b c", "😀", "a\uFFFD\uFFFDb", "a\uFFFDb", "x:y", "mcp_list", "sudo rm y", "nohup mytool x",
		"line\nbreak", "# comment\nls", " ls ", "\x1b[2J", loneHigh, "x" + loneLow, "😀x", "\ufffd", "/home/u/", "/"}
	// WTF-8 lone \ud83d and \ude00 (jsonparse.AppendSurrogate), written to files as \u escapes.
	loneHigh, loneLow = "\xed\xa0\xbd", "\xed\xb8\x80"
	homes             = []string{"/home/u", "/home/u/", "/", ""}
	states            = []string{"allow", "ask", "deny"}
	intKnobs          = []string{"forwardingTimeoutMs", "promptMaxRows", "promptFieldMaxWidth", "reviewLogFieldMaxWidth", "toolInputPreviewMaxLength", "toolTextSummaryMaxLength"}
	intKnobVals       = []string{"1", "500", "9007199254740991", "9007199254740992", "1e300", "0", "-1", "1.5", `"7"`}
	otherKnobs        = []string{`"debugLog":true`, `"debugLog":"on"`, `"shellTools":{"__proto__":5}`, `"shellTools":{"sh":{"commandArgument":"c"}}`, `"$schema":"x"`, `"commandEffects":{}`}
	quirkyQuotes      = []string{"", `"`, "'"}
)

// vectorPools adds every surface, pattern key, value and agent file of the
// ruleset vectors to the base pools.
func vectorPools(t testing.TB) pools {
	p := pools{surfaces: slices.Clone(baseSurfaces), patterns: slices.Clone(basePatterns), values: slices.Clone(baseValues)}
	for _, v := range testkit.ReadJSONL[testkit.Ruleset](t, "ruleset.jsonl") {
		p.surfaces = append(p.surfaces, v.Surface)
		p.values = append(p.values, v.Values...)
		for _, raw := range []json.RawMessage{v.Global, v.Project} {
			var cfg struct {
				Permission map[string]json.RawMessage `json:"permission"`
			}
			if json.Unmarshal(raw, &cfg) != nil {
				continue
			}
			for surface, val := range cfg.Permission {
				p.surfaces = append(p.surfaces, surface)
				var m map[string]any
				if json.Unmarshal(val, &m) == nil {
					for pat := range m {
						p.patterns = append(p.patterns, pat)
					}
				}
			}
		}
		for _, text := range v.Agents {
			p.agentFiles = append(p.agentFiles, text)
		}
	}
	// Sorted, so a seed names the same cases whatever the map order;
	// repeats stay, weighting the names the vectors use most.
	for _, pool := range [][]string{p.surfaces, p.patterns, p.values, p.agentFiles} {
		slices.Sort(pool)
	}
	return p
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func (pl pools) surfaceMap(r *rand.Rand, n int) []genSurface {
	out := make([]genSurface, 0, n)
	for range n {
		s := genSurface{key: pick(r, pl.surfaces)}
		if r.IntN(4) == 0 {
			s.state = pick(r, states)
		} else {
			s.isMap = true
			for range r.IntN(5) {
				e := genEntry{pat: pick(r, pl.patterns), state: pick(r, states)}
				if r.IntN(8) == 0 {
					reason := strings.Repeat(pick(r, []string{"no", "😀", "é"}), r.IntN(300))
					e.state, e.reason = "deny", &reason
				}
				s.entries = append(s.entries, e)
			}
		}
		out = append(out, s)
	}
	return out
}

func (pl pools) config(r *rand.Rand) *genConfig {
	if r.IntN(4) == 0 {
		return nil
	}
	c := &genConfig{perms: pl.surfaceMap(r, r.IntN(6)), comment: r.IntN(3) == 0}
	if r.IntN(4) == 0 {
		c.knobs = append(c.knobs, `"`+pick(r, intKnobs)+`":`+pick(r, intKnobVals))
	}
	if r.IntN(6) == 0 {
		c.knobs = append(c.knobs, pick(r, otherKnobs))
	}
	if r.IntN(5) == 0 {
		c.yolo = pick(r, []string{"true", "false"})
	}
	return c
}

func (pl pools) agentsOf(r *rand.Rand, names []string) []genAgent {
	var out []genAgent
	for _, name := range names {
		if r.IntN(3) == 0 {
			continue
		}
		a := genAgent{name: name, indent: 1 + r.IntN(4), quote: pick(r, quirkyQuotes), crlf: r.IntN(4) == 0, comments: r.IntN(3) == 0}
		if len(pl.agentFiles) > 0 && r.IntN(4) == 0 {
			a.raw = pick(r, pl.agentFiles)
		} else {
			a.perms = pl.surfaceMap(r, r.IntN(5))
		}
		out = append(out, a)
	}
	return out
}

func (pl pools) policy(r *rand.Rand) genPolicy {
	g := genPolicy{global: pl.config(r), project: pl.config(r), local: pl.config(r), legacy: pl.config(r), home: pick(r, homes)}
	g.agents = pl.agentsOf(r, []string{"a", "b", "0"})
	g.projectAgents = pl.agentsOf(r, []string{"a", "c"})
	for range r.IntN(3) {
		g.grants = append(g.grants, wire.Grant{Surface: pick(r, pl.surfaces), Pattern: pick(r, pl.patterns)})
	}
	return g
}

// tighten makes every state stricter with probability 1/3.
func tighten(r *rand.Rand, g *genPolicy) {
	stricter := func(s string) string {
		if r.IntN(3) != 0 {
			return s
		}
		switch s {
		case "allow":
			return pick(r, []string{"ask", "deny"})
		case "ask":
			return "deny"
		}
		return s
	}
	perms := func(ps []genSurface) {
		for i := range ps {
			ps[i].state = stricter(ps[i].state)
			for j := range ps[i].entries {
				if ps[i].entries[j].reason == nil {
					ps[i].entries[j].state = stricter(ps[i].entries[j].state)
				}
			}
		}
	}
	for _, c := range []*genConfig{g.global, g.project, g.local, g.legacy} {
		if c != nil {
			perms(c.perms)
		}
	}
	for _, as := range [][]genAgent{g.agents, g.projectAgents} {
		for i := range as {
			perms(as[i].perms)
		}
	}
}

// rawJSONString quotes s for JSON, keeping invalid UTF-8 bytes raw (as a file
// on disk may hold them) and writing a lone surrogate as its \u escape.
func rawJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if u, ok := wire.SurrogateAt(s[i:]); ok {
			fmt.Fprintf(&b, `\u%04x`, u)
			i += 2
			continue
		}
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// render writes the config; noise puts comments and whitespace between
// every two tokens, which must change nothing.
func (c *genConfig) render(noise bool) string {
	sep := ""
	if noise {
		sep = " /* c, \"x\": 1 */\n\t// line\n "
	}
	parts := append([]string(nil), c.knobs...)
	if c.yolo != "" {
		parts = append(parts, `"yoloMode":`+c.yolo)
	}
	var p strings.Builder
	p.WriteString(`"permission":{`)
	for i, s := range c.perms {
		if i > 0 {
			p.WriteString("," + sep)
		}
		p.WriteString(rawJSONString(s.key) + ":" + sep)
		if !s.isMap {
			p.WriteString(rawJSONString(s.state))
			continue
		}
		p.WriteByte('{')
		for j, e := range s.entries {
			if j > 0 {
				p.WriteString("," + sep)
			}
			p.WriteString(rawJSONString(e.pat) + ":")
			if e.reason != nil {
				p.WriteString(`{"action":"deny","reason":` + rawJSONString(*e.reason) + `}`)
			} else {
				p.WriteString(rawJSONString(e.state))
			}
		}
		p.WriteByte('}')
	}
	p.WriteByte('}')
	parts = append(parts, p.String())
	head := "{"
	if c.comment {
		head = "// generated\n{ /* policy */ "
	}
	return head + strings.Join(parts, ","+sep) + "}"
}

// render writes the agent file; noise adds blank and comment lines between
// the frontmatter's lines, which must change nothing.
func (a *genAgent) render(noise bool) string {
	if a.raw != "" {
		return a.raw
	}
	ind := strings.Repeat(" ", a.indent)
	key := func(k string) string { return a.quote + k + a.quote }
	lines := []string{"---", "description: generated", "permission:"}
	for _, s := range a.perms {
		if !s.isMap {
			lines = append(lines, ind+key(s.key)+": "+s.state)
			continue
		}
		lines = append(lines, ind+key(s.key)+":")
		for _, e := range s.entries {
			if e.reason != nil {
				lines = append(lines, ind+ind+key(e.pat)+":", ind+ind+ind+"action: deny", ind+ind+ind+"reason: "+*e.reason)
				continue
			}
			lines = append(lines, ind+ind+key(e.pat)+": "+e.state)
		}
		if a.comments {
			lines = append(lines, ind+"# note: allow")
		}
	}
	nl := "\n"
	if a.crlf {
		nl = "\r\n"
	}
	if noise {
		var noisy []string
		for i, l := range lines {
			noisy = append(noisy, l)
			if i > 0 {
				noisy = append(noisy, "", ind+"# c: allow")
			}
		}
		lines = noisy
	}
	return strings.Join(append(lines, "---", "body"), nl) + nl
}

// write lays the policy out under root (with noise, see render); mangle,
// when set, may change each file's text.
func (g *genPolicy) write(t testing.TB, root string, noise bool, mangle func(string) string) LoadOptions {
	opts := LoadOptions{AgentDir: filepath.Join(root, "agent"), ProjectDir: filepath.Join(root, "proj"), TrustProject: true, Home: g.home}
	put := func(path, text string) {
		if mangle != nil {
			text = mangle(text)
		}
		testkit.WriteFile(t, path, []byte(text))
	}
	files := []string{GlobalConfigPath(opts.AgentDir), ProjectConfigPaths(opts.ProjectDir)[0], ProjectConfigPaths(opts.ProjectDir)[1],
		LegacyProjectPath(opts.ProjectDir)}
	for i, c := range []*genConfig{g.global, g.project, g.local, g.legacy} {
		if c != nil {
			put(files[i], c.render(noise))
		}
	}
	for _, a := range g.agents {
		put(filepath.Join(opts.AgentDir, "agents", a.name+".md"), a.render(noise))
	}
	for _, a := range g.projectAgents {
		put(filepath.Join(opts.ProjectDir, ".pi", "agents", a.name+".md"), a.render(noise))
	}
	return opts
}

// fill turns a pattern into a value it may match.
func fill(r *rand.Rand, pl pools, pat string) string {
	var b strings.Builder
	for _, c := range pat {
		switch c {
		case '*':
			b.WriteString(pick(r, []string{"", "x", " y", "/a/b", pick(r, pl.values)}))
		case '?':
			b.WriteString(pick(r, []string{"x", "é", "😀"}))
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func (pl pools) query(r *rand.Rand) Query {
	q := Query{Agent: pick(r, []string{"", "a", "b", "c", "0", "ghost"}), Surface: pick(r, pl.surfaces)}
	for range r.IntN(4) {
		if r.IntN(2) == 0 {
			q.Values = append(q.Values, fill(r, pl, pick(r, pl.patterns)))
		} else {
			q.Values = append(q.Values, pick(r, pl.values))
		}
	}
	if r.IntN(6) == 0 {
		q.Floor = new("<indirection-bash-wrapper>")
	}
	if r.IntN(6) == 0 {
		for range 1 + r.IntN(3) {
			u := wire.AskingUnit{Command: fill(r, pl, pick(r, pl.patterns))}
			if r.IntN(2) == 0 {
				u.Floor = new("<shell-syntax>")
			}
			q.AskingUnits = append(q.AskingUnits, u)
		}
	}
	return q
}

// checkVerdict: the explanation names the deciding rule and is inert text.
func checkVerdict(p *Policy, q Query, v Verdict) error {
	if !utf8.ValidString(v.Explanation) || strings.ContainsFunc(v.Explanation, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }) {
		return fmt.Errorf("explanation carries invalid UTF-8 or a control character: %q", v.Explanation)
	}
	if v.Rule == nil {
		return fmt.Errorf("no deciding rule: %+v", v)
	}
	if v.Rule.Origin == OriginSession {
		if !strings.Contains(v.Explanation, "whole-session grant") {
			return fmt.Errorf("a grant decided but the explanation does not say so: %q", v.Explanation)
		}
		return nil
	}
	rs := p.rulesetFor(q.Agent)
	if desc := rs.rules[v.Rule.Index].desc; !strings.Contains(v.Explanation, desc) {
		return fmt.Errorf("explanation %q does not name the deciding rule %q", v.Explanation, desc)
	}
	return nil
}

// checkIndex compares the indexed search with a scan of every rule, top
// down, using the reference matcher.
func checkIndex(p *Policy, q Query) error {
	rs := p.rulesetFor(q.Agent)
	values := q.Values
	if len(values) == 0 {
		values = starValues
	}
	surfaces := []string{q.Surface}
	if read, write, ok := familyMembers(q.Surface); ok {
		surfaces = []string{read, write}
	}
	for _, s := range surfaces {
		got := p.judge(rs, s, values, nil)
		want := -1
		for i := len(rs.rules) - 1; i >= 0 && want < 0; i-- {
			r := &rs.rules[i]
			// full.expr is the pattern after home expansion.
			if !refMatch(r.surface.full.expr, s) {
				continue
			}
			for _, v := range values {
				if refMatch(r.value.full.expr, v) {
					want = i
					break
				}
			}
		}
		if got.rule == nil || got.rule.ref.Index != want {
			return fmt.Errorf("surface %q values %q: the index chose %v, a full scan rule %d of %d", s, values, got.rule.desc, want+1, len(rs.rules))
		}
	}
	return nil
}

func TestPropertyRandomPolicies(t *testing.T) {
	cases := testkit.EnvInt(t, "PERMTUI_PROPERTY_CASES", 150)
	seed := uint64(testkit.EnvInt(t, "PERMTUI_PROPERTY_SEED", 1))
	pl := vectorPools(t)
	actions, problems, tightened := map[Action]int{}, 0, 0
	defer func() {
		t.Logf("%d policies (%d with a problem file), verdicts %v, %d where the stricter policy answered stricter", cases, problems, actions, tightened)
	}()
	for c := range cases {
		caseSeed := seed<<32 | uint64(c)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d (PERMTUI_PROPERTY_SEED=%d): %s", c, seed, fmt.Sprintf(format, args...))
		}
		r := rand.New(rand.NewPCG(caseSeed, 1))
		orig := pl.policy(r)
		strict := pl.policy(rand.New(rand.NewPCG(caseSeed, 1)))
		tighten(r, &strict)
		dir := t.TempDir()
		p := Load(orig.write(t, filepath.Join(dir, "orig"), false, nil))
		ps := Load(strict.write(t, filepath.Join(dir, "strict"), false, nil))
		pn := Load(orig.write(t, filepath.Join(dir, "noisy"), true, nil))
		noLegacy := orig
		noLegacy.legacy = nil
		pl0 := Load(noLegacy.write(t, filepath.Join(dir, "nolegacy"), false, nil))
		if len(p.Problems()) > 0 {
			problems++
		}
		for range 12 {
			q := pl.query(r)
			v := p.Evaluate(q, orig.grants)
			if err := checkVerdict(p, q, v); err != nil {
				fail("%v", err)
			}
			if err := checkIndex(p, q); err != nil {
				fail("%v", err)
			}
			actions[v.Action]++
			vs := ps.Evaluate(q, orig.grants)
			if Restrictiveness(vs.Action) < Restrictiveness(v.Action) {
				fail("the stricter policy allows more for %+v: %s → %s\n%s\n%s", q, v.Action, vs.Action, v.Explanation, vs.Explanation)
			}
			if vs.Action != v.Action {
				tightened++
			}
			if v0 := pl0.Evaluate(q, orig.grants); Restrictiveness(v.Action) < Restrictiveness(v0.Action) {
				fail("the legacy file allows more for %+v: %s without it, %s with it\n%s", q, v0.Action, v.Action, v.Explanation)
			}
			if vn := pn.Evaluate(q, orig.grants); vn.Action != v.Action || vn.Origin != v.Origin || deref(vn.Pattern) != deref(v.Pattern) || vn.Reason != v.Reason {
				fail("comments and blank lines changed the verdict for %+v:\n%s\n%s", q, v.Explanation, vn.Explanation)
			}
		}
		// Totality on mangled files: cut short, a flipped byte, an
		// unclosed comment or string.
		mangled := Load(orig.write(t, filepath.Join(dir, "mangled"), false, func(text string) string {
			if text == "" {
				return text
			}
			i := r.IntN(len(text))
			switch r.IntN(4) {
			case 0:
				return text[:i]
			case 1:
				return text[:i] + string(rune(r.IntN(256))) + text[i+1:]
			case 2:
				return text[:i] + "/*" + text[i:]
			}
			return text[:i] + "\"\xff" + text[i:]
		}))
		q := pl.query(r)
		if err := checkVerdict(mangled, q, mangled.Evaluate(q, nil)); err != nil {
			fail("mangled files: %v", err)
		}
	}
}

// TestPropertyVectorPolicies: the invariants on every vector's own policy,
// with its query and random ones.
func TestPropertyVectorPolicies(t *testing.T) {
	pl := vectorPools(t)
	r := rand.New(rand.NewPCG(2, 3))
	for _, v := range testkit.ReadJSONL[testkit.Ruleset](t, "ruleset.jsonl") {
		p := rulesetPolicy(t, v)
		queries := []Query{{Agent: v.Agent, Surface: v.Surface, Values: v.Values, Floor: v.Floor}}
		for range 8 {
			queries = append(queries, pl.query(r))
		}
		for _, q := range queries {
			if err := checkVerdict(p, q, p.Evaluate(q, vectorGrants(v))); err != nil {
				t.Errorf("%s: %v", v.ID, err)
			}
			if err := checkIndex(p, q); err != nil {
				t.Errorf("%s: %v", v.ID, err)
			}
		}
	}
}

// FuzzPolicyText: any config or agent-file text parses without a panic, and
// the ruleset it yields explains every verdict by its deciding rule and
// agrees with a full scan. Seeded from the vectors' files; `task fuzz` runs it.
func FuzzPolicyText(f *testing.F) {
	for _, v := range testkit.ReadJSONL[testkit.Ruleset](f, "ruleset.jsonl") {
		if len(v.Global) > 0 {
			f.Add(string(v.Global), "bash", "git status")
		}
		for _, text := range v.Agents {
			f.Add(text, v.Surface, strings.Join(v.Values, ""))
		}
	}
	f.Fuzz(func(t *testing.T, text, surface, value string) {
		var scopes []*permissions
		if cfg, err := parseConfig(text, OriginGlobal, "config.json"); err == nil {
			scopes = appendScope(scopes, cfg.perms)
		}
		scopes = appendScope(scopes, agentPermissions(text, OriginAgent, "a.md"))
		p := &Policy{agents: map[string]*ruleset{}}
		p.base = compose(mergeScopes(scopes), nil, "")
		q := Query{Surface: surface, Values: []string{value}}
		if err := checkVerdict(p, q, p.Evaluate(q, nil)); err != nil {
			t.Fatal(err)
		}
		if err := checkIndex(p, q); err != nil {
			t.Fatal(err)
		}
	})
}
