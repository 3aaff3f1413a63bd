package policyedit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
)

// TestRegionWitnesses: among the region values of two globs is one both
// match whenever they meet, and none when they cannot; every value is in
// the region it stands for (each glob matches it or not as the search says).
func TestRegionWitnesses(t *testing.T) {
	home := ""
	for _, c := range []struct {
		a, b string
		ok   bool
	}{
		{"rm *", "rm -rf /tmp/*", true},
		{"/home/u/*", "/home/u/.ssh/*", true},
		{"a*b*c", "*bc*", true},
		{"*.env", "src/*", true},
		{"git *", "npm *", false},
		{"*.ts", "*.js", false},
		{"cat site.???", "cat *.pem", true},
		{"a?c*", "*bc?d", true},
		{"??", "abc", false},
		{"src/?/*", "*/x/??", true},
	} {
		vs, done := regions([]string{c.a, c.b}, false)
		pa, pb := resolve.CompilePattern(c.a, home), resolve.CompilePattern(c.b, home)
		both := slices.ContainsFunc(vs, func(v string) bool { return pa.Match(v) && pb.Match(v) })
		if !done || both != c.ok {
			t.Errorf("regions(%q, %q) = %q (done %v): a value of both: %v, want %v", c.a, c.b, vs, done, both, c.ok)
		}
	}
	// "/a " is in "/*" and "* " but not "? *": the third glob takes the
	// shorter values of the first two's overlap.
	globs := []string{"/*", "* ", "? *"}
	vs, _ := regions(globs, false)
	if !slices.ContainsFunc(vs, func(v string) bool {
		p := func(g string) bool { c := resolve.CompilePattern(g, home); return c.Match(v) }
		return p(globs[0]) && p(globs[1]) && !p(globs[2])
	}) {
		t.Errorf("regions(%q) = %q: no value in the first two and not the third", globs, vs)
	}
}

// BenchmarkAuthorityDiff: a policy of 60 bash and 20 read rules, four agent
// files, and one rule added (docs/performance.md).
func BenchmarkAuthorityDiff(b *testing.B) {
	var bash, read []string
	for i := range 60 {
		bash = append(bash, fmt.Sprintf("%q:%q", fmt.Sprintf("cmd%d *", i), []string{"allow", "ask", "deny"}[i%3]))
	}
	for i := range 20 {
		read = append(read, fmt.Sprintf("%q:%q", fmt.Sprintf("~/dir%d/*", i), []string{"allow", "deny"}[i%2]))
	}
	files := map[string]string{"global": `{"permission":{"*":"ask","bash":{` + strings.Join(bash, ",") + `},"read":{` + strings.Join(read, ",") + `}}}`}
	for i := range 4 {
		files[fmt.Sprintf("agents/a%d.md", i)] = "---\nname: a\npermission:\n  bash:\n    \"cmd1 *\": deny\n---\n"
	}
	e := newEnv(b, files)
	target, err := Locate(e.opts, ScopeGlobal, "", resolve.Allow)
	if err != nil {
		b.Fatal(err)
	}
	ch, err := Plan(e.opts, target, Rule{Surface: "bash", Pattern: "cmd *", Action: resolve.Allow}, resolve.Query{Surface: "bash", Values: []string{"cmd x"}})
	if err != nil {
		b.Fatal(err)
	}
	before, after := ch.Current, ch.Edited
	for b.Loop() {
		if _, err := AuthorityDiff(before, after); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAliasesPassingADenyAreNamed: a path comes with its aliases and the
// highest rule matching any of them decides, so a relative allow passes an
// absolute deny where both aliases are judged together, though neither
// value alone loosens beyond what the person named.
func TestAliasesPassingADenyAreNamed(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"permission":{"read":{"*":"ask","/w/p/secrets/*":"deny"}}}`})
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "read", Pattern: "secrets/*", Action: resolve.Allow}, "secrets/a")
	if err != nil {
		t.Fatal(err)
	}
	g := Group(ch.Loosens)
	if len(g) != 1 || g[0].First.Before.Rule.Pattern != "/w/p/secrets/*" || g[0].First.After.Action != resolve.Allow {
		t.Fatalf("Loosens = %v", g)
	}
}

// TestOnlyTheOverlapShowsAPassedDeny: neither pattern's own witnesses
// ("git x", "git ", "xpush", "push") match the other, only their overlap
// "git push" shows the allow passing the deny.
func TestOnlyTheOverlapShowsAPassedDeny(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"permission":{"bash":{"*":"ask","git *":"deny"}}}`})
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "*push", Action: resolve.Allow}, "hg push")
	if err != nil {
		t.Fatal(err)
	}
	g := Group(ch.Loosens)
	if len(g) != 1 || g[0].First.Before.Rule.Pattern != "git *" || g[0].First.Value != "git push" {
		t.Fatalf("Loosens = %v", g)
	}
}

// TestAReorderedRulePassingADenyOnAliasesIsNamed: no value alone changes
// its verdict, but a path inside the project judged with its
// project-relative alias goes deny → allow, because pi's merge moves a
// deny (a) or the edit moves an allow (b) to where the other rule comes
// after it. Both must be named, though the rule that decides after is one
// that only moved.
func TestAReorderedRulePassingADenyOnAliasesIsNamed(t *testing.T) {
	for _, c := range []struct {
		name   string
		files  func(p string) map[string]string
		rule   func(p string) Rule
		before string // the pattern of the deny passed
	}{
		{"agent deny moved to the global slot", func(p string) map[string]string {
			return map[string]string{
				"global":        `{"permission":{"*":"ask","read":{"*":"ask"}}}`,
				"agents/rev.md": "---\nname: rev\npermission:\n  read:\n    \"" + p + "/*\": allow\n    \"src/secret/*\": deny\n---\n",
			}
		}, func(string) Rule { return Rule{Surface: "read", Pattern: "src/secret/*", Action: resolve.Deny} }, "src/secret/*"},
		{"allow moved last", func(p string) map[string]string {
			return map[string]string{"global": `{"permission":{"read":{"*":"ask","` + p + `/*":"allow","src/secret/*":"deny"}}}`}
		}, func(p string) Rule { return Rule{Surface: "read", Pattern: p + "/*", Action: resolve.Allow} }, "src/secret/*"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			p := e.opts.ProjectDir
			for name, text := range c.files(p) {
				testkit.WriteFile(t, e.path(name), []byte(text))
			}
			r := c.rule(p)
			ch, err := e.plan(t, ScopeGlobal, "", r, strings.ReplaceAll(r.Pattern, "*", "k"))
			if err != nil {
				t.Fatal(err)
			}
			pair := []string{p + "/src/secret/k", "src/secret/k"}
			for _, agent := range []string{"", "rev"} {
				q := resolve.Query{Agent: agent, Surface: "read", Values: pair}
				b, a := ch.Current.Evaluate(q, nil), ch.Edited.Evaluate(q, nil)
				if b.Action != resolve.Deny || a.Action != resolve.Allow {
					continue
				}
				if !slices.ContainsFunc(ch.Loosens, func(l Loosening) bool {
					return l.Agent == agent && l.Before.Rule != nil && l.Before.Rule.Pattern == c.before && l.After.Action == resolve.Allow
				}) {
					t.Errorf("agent %q: %v deny → allow is not named; named: %v", agent, pair, Group(ch.Loosens))
				}
				return
			}
			t.Fatalf("the pair %v loosens in no view: the test does not show the case", pair)
		})
	}
}

// TestARegionSearchCutOffRefuses: past the bound of the region search the
// diff cannot tell what a rule loosens, so nothing is planned.
//
// "*a" and 15 "?" must remember which of the last 16 characters were "a":
// 2^15 states, past the bound.
func TestARegionSearchCutOffRefuses(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"permission":{"bash":{"*":"ask","cat *.pem":"deny"}}}`})
	pattern := "*a" + strings.Repeat("?", 15)
	_, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: pattern, Action: resolve.Allow}, "xa"+strings.Repeat("0", 15))
	if err == nil || !strings.Contains(err.Error(), `the patterns on "bash" cut more regions than permtui searches`) {
		t.Fatalf("Plan err = %v", err)
	}
}

// TestAnUntrustedProjectsAgentsAreJudged: pi reads the project's agent
// files once the project is trusted, so a rule written while it is not
// still names what it loosens for them, and says when.
func TestAnUntrustedProjectsAgentsAreJudged(t *testing.T) {
	e := newEnv(t, map[string]string{
		"global":                   `{"permission":{"bash":{"*":"ask"}}}`,
		"project-agents/locked.md": "---\nname: locked\npermission:\n  bash:\n    \"*\": deny\n---\n",
	})
	e.opts.TrustProject = false
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "npm *", Action: resolve.Allow}, "npm test")
	if err != nil {
		t.Fatal(err)
	}
	g := Group(ch.Loosens)
	if len(g) != 1 || !slices.Equal(g[0].Views, []string{"locked"}) || !g[0].First.Trusted || !strings.Contains(g[0].String(), "once the project is trusted") {
		t.Fatalf("Loosens = %v", g)
	}
}

// TestAHeldProjectsAllowIsALoosening: while the project's allows are held
// for a person (decision 0206) serve does not auto-allow what a project rule
// allows, but pi does once it trusts the project, so the edit still names
// that loosening, and says when.
func TestAHeldProjectsAllowIsALoosening(t *testing.T) {
	e := newEnv(t, map[string]string{
		"global":  `{"permission":{"bash":{"*":"ask"}}}`,
		"project": `{"permission":{"bash":{"git *":"deny"}}}`,
	})
	e.opts.HoldProjectAllows = true
	cand := e.opts
	cand.Overlay = map[string][]byte{e.path("project"): []byte(`{"permission":{"bash":{"git *":"deny","curl *":"allow"}}}`)}
	l, err := Loosenings(resolve.Load(e.opts), resolve.Load(cand))
	if err != nil {
		t.Fatal(err)
	}
	g := Group(l)
	if len(g) != 1 || g[0].First.Surface != "bash" || g[0].First.After.Action != resolve.Allow || !g[0].First.Trusted {
		t.Fatalf("Loosens = %v", g)
	}
}

// DescribeVerdict names yoloMode where it, not the rule's action, decided:
// an ask rule it turned allow, an allow it kept past the child's floor.
func TestDescribeVerdictNamesYoloMode(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"yoloMode":true,"permission":{"bash":{"*":"ask","ls *":"allow"}}}`})
	p := resolve.Load(e.opts)
	yolo := "yoloMode true in " + e.path("global")
	floor := "<indirection-bash-wrapper>"
	for _, c := range []struct {
		q    resolve.Query
		want string
	}{
		{resolve.Query{Surface: "bash", Values: []string{"npm test"}}, `"bash" "*" → ask (global ` + e.path("global") + `), turned allow by ` + yolo},
		{resolve.Query{Surface: "bash", Values: []string{"ls x"}, Floor: &floor}, `"bash" "ls *" → allow (global ` + e.path("global") + `), kept allow past the floor "<indirection-bash-wrapper>" by ` + yolo},
		{resolve.Query{Surface: "bash", Values: []string{"ls x"}}, `"bash" "ls *" → allow (global ` + e.path("global") + `)`},
	} {
		if got := DescribeVerdict(p.Evaluate(c.q, nil)); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.q.Values, got, c.want)
		}
	}
}
