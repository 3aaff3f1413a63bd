package policyedit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
)

// TestOverlapWitness: the overlap value matches both globs whenever their
// prefixes and suffixes agree, and none is built when they cannot meet.
func TestOverlapWitness(t *testing.T) {
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
	} {
		v, ok := overlap(c.a, c.b)
		if ok != c.ok {
			t.Errorf("overlap(%q, %q) ok = %v, want %v", c.a, c.b, ok, c.ok)
			continue
		}
		pa, pb := resolve.CompilePattern(c.a, home), resolve.CompilePattern(c.b, home)
		if ok && (!pa.Match(v) || !pb.Match(v)) {
			t.Errorf("overlap(%q, %q) = %q, which does not match both", c.a, c.b, v)
		}
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
	target, err := Locate(e.opts, ScopeGlobal, "")
	if err != nil {
		b.Fatal(err)
	}
	ch, err := Plan(e.opts, target, Rule{Surface: "bash", Pattern: "cmd *", Action: resolve.Allow}, resolve.Query{Surface: "bash", Values: []string{"cmd x"}})
	if err != nil {
		b.Fatal(err)
	}
	before, after := resolve.Load(e.opts), resolve.Load(ch.Candidate(e.opts))
	for b.Loop() {
		AuthorityDiff(before, after)
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
