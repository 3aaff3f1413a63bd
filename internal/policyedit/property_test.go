package policyedit

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/judgment"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
)

// The generated trees draw patterns and values from one small alphabet, so
// a dense set of values (every string over it up to a length, and the same
// under the home directory) reaches every region the patterns cut.
var (
	propAlphabet = []string{"a", "b", "/", " "}
	propSurfaces = []string{"bash", "read", "mcp", "task"}
	propActions  = []resolve.Action{resolve.Allow, resolve.Ask, resolve.Deny}
)

// propPattern is a random pattern: literal runs, stars and question marks,
// sometimes led by a home token (expanded by pi in patterns, never in
// values).
func propPattern(r *rand.Rand) string {
	var b strings.Builder
	switch r.IntN(6) {
	case 0:
		b.WriteString("~/")
	case 1:
		b.WriteString("$HOME/")
	}
	for range 1 + r.IntN(3) {
		switch r.IntN(6) {
		case 0, 1:
			b.WriteString("*")
		case 2:
			b.WriteString("?")
		default:
			b.WriteString(pick(r, propAlphabet))
		}
	}
	if r.IntN(4) == 0 {
		b.WriteString(" *")
	}
	return b.String()
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// propPermission is a random permission object: state strings and pattern
// maps on the surfaces, sometimes the universal "*" and an mcp map.
func propPermission(r *rand.Rand) map[string]any {
	perm := map[string]any{}
	for _, s := range propSurfaces {
		switch r.IntN(4) {
		case 0:
			perm[s] = string(pick(r, propActions))
		case 1, 2:
			m := map[string]any{}
			for range 1 + r.IntN(3) {
				p := propPattern(r)
				if s == "mcp" && r.IntN(2) == 0 {
					p = pick(r, []string{"mcp_status", "mcp_*", "*", "x*"})
				}
				m[p] = string(pick(r, propActions))
			}
			perm[s] = m
		}
	}
	if r.IntN(3) == 0 {
		perm["*"] = string(pick(r, propActions))
	}
	return perm
}

// propTree writes a random tree: global and project configs, agent files in
// both scopes (agent a2 in both).
func propTree(t *testing.T, r *rand.Rand) env {
	t.Helper()
	files := map[string]string{}
	config := func() string {
		data, err := json.Marshal(map[string]any{"permission": propPermission(r)})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	agent := func(name string) string {
		data, err := json.Marshal(propPermission(r))
		if err != nil {
			t.Fatal(err)
		}
		// YAML is a superset of JSON: the flow mapping is pi's frontmatter.
		return "---\nname: " + name + "\npermission: " + string(data) + "\n---\n"
	}
	if r.IntN(5) > 0 {
		files["global"] = config()
	}
	if r.IntN(2) == 0 {
		files["project"] = config()
	}
	for _, name := range []string{"a1", "a2"} {
		if r.IntN(2) == 0 {
			files["agents/"+name+".md"] = agent(name)
		}
	}
	for _, name := range []string{"a2", "a3"} {
		if r.IntN(3) == 0 {
			files["project-agents/"+name+".md"] = agent(name)
		}
	}
	return newEnv(t, files)
}

// propValues is the dense value set: every string over the alphabet up to
// four characters, the same under the home directory up to three, and the
// MCP baseline's names.
func propValues(home string) []string {
	values := []string{""}
	for n, layer := 0, []string{""}; n < 4; n++ {
		var next []string
		for _, v := range layer {
			for _, a := range propAlphabet {
				next = append(next, v+a)
			}
		}
		values = append(values, next...)
		layer = next
	}
	var homed []string
	for _, v := range values {
		if len(v) <= 3 {
			homed = append(homed, home+v, home+"/"+v)
		}
	}
	return slices.Concat(values, homed, resolve.MCPBaseline())
}

// TestAuthorityDiffNamesEveryLoosening: over random trees and random rule
// additions, every verdict that any view judges looser after the edit, at
// any value of the dense set, is the person's own (an ask the new rule now
// allows) or is named by the change: same view, surface, rule before and
// rule after. PERMTUI_POLICYEDIT_CASES and PERMTUI_POLICYEDIT_SEED run more.
func TestAuthorityDiffNamesEveryLoosening(t *testing.T) {
	cases := testkit.EnvInt(t, "PERMTUI_POLICYEDIT_CASES", 400)
	seed := uint64(testkit.EnvInt(t, "PERMTUI_POLICYEDIT_SEED", 1))
	planned, loosening, piChecked := 0, 0, 0
	pi := startPiJudge(t, "/home/u")
	defer func() {
		t.Logf("%d cases, %d rules planned, %d of them loosen something unnamed; pi judged %d queries twice", cases, planned, loosening, piChecked)
	}()
	for c := range cases {
		r := rand.New(rand.NewPCG(seed, uint64(c)))
		e := propTree(t, r)
		scope := pick(r, []Scope{ScopeGlobal, ScopeGlobal, ScopeProject, ScopeAgent})
		agent := ""
		if scope == ScopeAgent {
			agent = pick(r, []string{"a1", "a2", "a3"})
		}
		rule := Rule{Surface: pick(r, propSurfaces), Pattern: propPattern(r), Action: pick(r, propActions)}
		target, err := Locate(e.opts, scope, agent, rule.Action)
		if err != nil {
			continue // no such agent file
		}
		compiled := resolve.CompilePattern(rule.Pattern, e.opts.Home)
		facts := resolve.Query{Agent: agent, Surface: rule.Surface, Values: []string{fill(compiled.Expanded(), "a")}}
		ch, err := Plan(e.opts, target, rule, facts)
		if err != nil {
			continue // pi's ordering would not let it decide: refused
		}
		planned++
		if len(ch.Loosens) > 0 {
			loosening++
		}
		before, after := ch.Current, ch.Edited
		views := slices.Concat([]string{"", "nobody"}, before.Agents(), after.Agents())
		dense := propValues(e.opts.Home)
		pairs := rand.New(rand.NewPCG(seed, uint64(c)|1<<63)) // apart from the tree's stream
		var asked []resolve.Query                             // for pi, when it judges too
		var verdicts [][2]resolve.Action
		// check reports whether the edit changed the verdict at all.
		check := func(view, surface string, values ...string) bool {
			q := resolve.Query{Agent: view, Surface: surface, Values: values}
			req := judgment.FactsRequest(q)
			b, a := judgment.Verdict(before, req, nil, nil), judgment.Verdict(after, req, nil, nil)
			if pi != nil && surface != "mcp" { // the driver builds no MCP input
				asked, verdicts = append(asked, q), append(verdicts, [2]resolve.Action{b.Action, a.Action})
			}
			changed := a.Action != b.Action || ruleKey(a.Rule) != ruleKey(b.Rule)
			if resolve.Restrictiveness(a.Action) >= resolve.Restrictiveness(b.Action) {
				return changed
			}
			if b.Action == resolve.Ask && ch.IsNewRule(a.Rule) {
				return true // what the person named
			}
			named := slices.ContainsFunc(ch.Loosens, func(l Loosening) bool {
				sameView := l.Agent == view || (view == "nobody" && l.Agent == "")
				return sameView && l.Surface == surface && ruleKey(l.Before.Rule) == ruleKey(b.Rule) && ruleKey(l.After.Rule) == ruleKey(a.Rule)
			})
			if !named {
				t.Fatalf("case %d (PERMTUI_POLICYEDIT_SEED=%d): %s written to %s loosens %s %q for agent %q from %s (%s) to %s (%s) unnamed; named: %v\nfiles: %s",
					c, seed, rule, target.File, surface, values, view, b.Action, DescribeRule(b.Rule), a.Action, DescribeRule(a.Rule), Group(ch.Loosens), dumpTree(e))
			}
			return true
		}
		for _, view := range views {
			for _, surface := range append(slices.Clone(propSurfaces), "path_read", "other") {
				if !resolve.ValueSurface(surface) {
					check(view, surface, "*") // pi judges an extension tool on "*" alone
					continue
				}
				var changed []string
				for _, value := range dense {
					if check(view, surface, value) {
						changed = append(changed, value)
					}
				}
				// A path with an alias: pairs of a value the edit changed
				// and any other (a pair of unchanged values cannot change
				// unless the edit reorders two untouched rules).
				if resolve.AliasSurface(surface) && len(changed) > 0 {
					for range 200 {
						check(view, surface, pick(pairs, dense), pick(pairs, changed))
					}
				}
			}
		}
		if pi != nil {
			// pi's own evaluator must give every verdict checked above,
			// before and after the rule is written: then what holds for
			// permtui's resolver holds for pi.
			if facts.Surface != "mcp" {
				asked, verdicts = append(asked, facts), append(verdicts, [2]resolve.Action{ch.Current.Evaluate(facts, nil).Action, rule.Action})
			}
			was := pi.judge(t, e, asked)
			if _, err := Apply(ch, e.opts, e.state, time.Now()); err != nil {
				t.Fatal(err)
			}
			now := pi.judge(t, e, asked)
			for i, q := range asked {
				if was[i] != verdicts[i][0] || now[i] != verdicts[i][1] {
					t.Fatalf("case %d (PERMTUI_POLICYEDIT_SEED=%d): %s written to %s: pi judges %+v %s → %s, permtui %s → %s\nfiles: %s",
						c, seed, rule, target.File, q, was[i], now[i], verdicts[i][0], verdicts[i][1], dumpTree(e))
				}
			}
			piChecked += len(asked)
		}
	}
}

// piJudge runs testdata/pi-judge.mts, which judges queries with the
// published pi-permission-system's own PermissionManager on the files as
// they are on disk. PERMTUI_PI_PEER names the pi-peer tsx.sh
// (../shared/pi-peer/tsx.sh after its setup.sh); without it, nil.
type piJudge struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startPiJudge(t *testing.T, home string) *piJudge {
	tsx := os.Getenv("PERMTUI_PI_PEER")
	if tsx == "" {
		return nil
	}
	cmd := exec.Command(tsx, filepath.Join("testdata", "pi-judge.mts"))
	cmd.Env = append(os.Environ(), "HOME="+home) // pi expands ~ with the home directory
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	return &piJudge{in: in, out: sc}
}

func (p *piJudge) judge(t *testing.T, e env, qs []resolve.Query) []resolve.Action {
	t.Helper()
	type query struct {
		Agent   string   `json:"agent"`
		Surface string   `json:"surface"`
		Values  []string `json:"values"`
	}
	job := struct {
		AgentDir string  `json:"agentDir"`
		Cwd      string  `json:"cwd"`
		Queries  []query `json:"queries"`
	}{AgentDir: e.opts.AgentDir, Cwd: e.opts.ProjectDir}
	for _, q := range qs {
		job.Queries = append(job.Queries, query{q.Agent, q.Surface, q.Values})
	}
	line, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	if !p.out.Scan() {
		t.Fatalf("pi-judge ended: %v", p.out.Err())
	}
	var res struct {
		States []resolve.Action `json:"states"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &res); err != nil || len(res.States) != len(qs) {
		t.Fatalf("pi-judge answered %q: %v", p.out.Bytes(), err)
	}
	return res.States
}

// dumpTree shows the policy files of a failing case.
func dumpTree(e env) string {
	var b strings.Builder
	for _, name := range []string{"global", "project", "agents/a1.md", "agents/a2.md", "project-agents/a2.md", "project-agents/a3.md"} {
		if data, err := os.ReadFile(e.path(name)); err == nil {
			fmt.Fprintf(&b, "\n%s: %s", name, data)
		}
	}
	return b.String()
}
