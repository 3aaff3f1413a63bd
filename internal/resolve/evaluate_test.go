package resolve

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

// Permuting matchValues never changes the state (aliases, §6.2).
func TestValueOrderNeverChangesState(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"ask","path":{"*":"allow","*.env":"deny","src/*":"ask","/w/p/*":"allow","*.env.example":"allow"},` +
		`"mcp":{"github_*":"allow","github":"deny","*search":"ask"},"read":{"/w/*":"allow","secret*":"deny"}}}`)
	p := Load(f.opts)
	pool := []string{"/w/p/.env", ".env", "src/a.ts", "/w/p/src/a.ts", "github", "github_search", "x_search", "secret.txt", "/w/x", "*", ".env.example", "/w/p/.env.example"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		values := slices.Clone(pool[:1+rng.IntN(len(pool))])
		rng.Shuffle(len(values), func(i, j int) { values[i], values[j] = values[j], values[i] })
		for _, surface := range []string{"path", "mcp", "read", "path_write"} {
			want := p.Evaluate(Query{Surface: surface, Values: values}, nil).Action
			for range 5 {
				perm := slices.Clone(values)
				rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
				if got := p.Evaluate(Query{Surface: surface, Values: perm}, nil).Action; got != want {
					t.Fatalf("%s %v = %s but %v = %s", surface, values, want, perm, got)
				}
			}
		}
	}
}

func TestReportedValueIsFirstMatchingInGivenOrder(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"read":{"*":"allow"}}}`)
	v := f.eval("", "read", "/w/p/a", "a")
	if v.Value != "/w/p/a" || v.Member != "" {
		t.Errorf("value = %q member = %q", v.Value, v.Member)
	}
}

func TestAskingUnitsMostRestrictiveFirstOnTie(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":{"*":"allow","git *":"ask","rm *":"deny"}}}`)
	p := Load(f.opts)
	floor := "<opaque-bash-wrapper>"
	q := Query{Surface: "bash", Values: []string{"ignored"}, AskingUnits: []wire.AskingUnit{
		{Command: "ls"}, {Command: "git push"}, {Command: "git pull"}, {Command: "cat x", Floor: &floor},
	}}
	v := p.Evaluate(q, nil)
	if v.Action != Ask || v.Unit != "git push" || deref(v.Pattern) != "git *" {
		t.Errorf("verdict = %s unit %q pattern %s, want ask from the first asking unit git push", v.Action, v.Unit, deref(v.Pattern))
	}
	q.AskingUnits = []wire.AskingUnit{{Command: "ls"}, {Command: "cat x", Floor: &floor}}
	v = p.Evaluate(q, nil)
	if v.Action != Ask || v.Unit != "cat x" || v.Floor != floor || deref(v.Pattern) != floor {
		t.Errorf("floored unit: %+v", v)
	}
	q.AskingUnits = []wire.AskingUnit{{Command: "ls"}, {Command: "rm -rf x"}}
	if v = p.Evaluate(q, nil); v.Action != Deny || v.Unit != "rm -rf x" {
		t.Errorf("deny unit: %+v", v)
	}
}

func TestRequestFloorKeepsSessionGrantAllow(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	p := Load(f.opts)
	floor := "<indirection-bash-wrapper>"
	v := p.Evaluate(Query{Surface: "bash", Values: []string{"xargs ls"}, Floor: &floor}, []wire.Grant{{Surface: "bash", Pattern: "xargs *"}})
	if v.Action != Allow || v.Origin != OriginSession || deref(v.Pattern) != "xargs *" || v.Floor != "" {
		t.Errorf("grant under a request floor: %+v", v)
	}
	if !strings.Contains(v.Explanation, "grant") {
		t.Errorf("explanation does not name the grant: %s", v.Explanation)
	}
}

func TestGrantsOnFamiliesAndDirections(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"path":"ask","external_directory":"ask"}}`)
	p := Load(f.opts)
	grants := []wire.Grant{{Surface: "path", Pattern: "/a/*"}, {Surface: "external_directory_write", Pattern: "/b/*"}}
	for _, c := range []struct {
		surface, value string
		want           Action
	}{
		{"path", "/a/x", Allow}, {"path_read", "/a/x", Allow}, {"path_write", "/a/x", Allow},
		{"external_directory_write", "/b/x", Allow}, {"external_directory", "/b/x", Ask}, {"external_directory_read", "/b/x", Ask},
		{"read", "/a/x", Ask}, {"path", "/c", Ask},
	} {
		if v := p.Evaluate(Query{Surface: c.surface, Values: []string{c.value}}, grants); v.Action != c.want {
			t.Errorf("%s %s = %s, want %s", c.surface, c.value, v.Action, c.want)
		}
	}
}

func TestBashValueDropsCommentLines(t *testing.T) {
	cases := map[string]string{
		"# a\ngit status":     "git status",
		"  ls  ":              "ls",
		"# only a comment":    "# only a comment",
		"echo '#x'":           "echo '#x'",
		"git log\n  # c\nls ": "git log\nls",
		"":                    "",
		"   ":                 "   ",
	}
	for in, want := range cases {
		if got := bashValue(in); got != want {
			t.Errorf("bashValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecidedBy(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"deny","bash":{"npm *":{"action":"deny","reason":"Use pnpm"}}}}`)
	p := Load(f.opts)
	v := p.Evaluate(Query{Surface: "bash", Values: []string{"npm i"}}, nil)
	d := v.DecidedBy()
	if d.Kind != wire.DecidedByRule || d.Surface != "bash" || deref(d.Pattern) != "npm *" || deref(d.Origin) != OriginGlobal || v.Reason != "Use pnpm" {
		t.Errorf("DecidedBy = %+v, reason %q", d, v.Reason)
	}
	v = p.Evaluate(Query{Surface: "skill", Values: []string{"x"}}, nil)
	if d := v.DecidedBy(); d.Pattern != nil || deref(d.Origin) != OriginGlobal || v.Rule == nil || v.Rule.Index != 0 {
		t.Errorf("default rule DecidedBy = %+v, rule %+v", d, v.Rule)
	}
	if (Verdict{Action: Ask}).DecidedBy() != nil {
		t.Error("a verdict without a rule has no DecidedBy")
	}
}

func TestEvaluateAllocatesLittle(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":{"*":"ask","git *":"allow"},"path":{"*":"ask","src/*":"allow"}}}`)
	p := Load(f.opts)
	q := Query{Surface: "path", Values: []string{"/w/p/src/a.ts", "src/a.ts"}}
	allocs := testing.AllocsPerRun(100, func() { p.Evaluate(q, nil) })
	if allocs > 1 {
		t.Errorf("Evaluate allocates %v times; the explanation should be its only cost", allocs)
	}
}

func TestExplanationNeutralisesControlCharacters(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":{"ls*":"allow"}}}`)
	v := f.eval("", "bash", "ls \x1b[2J\"x\"")
	if strings.ContainsRune(v.Explanation, 0x1b) || !strings.Contains(v.Explanation, `"ls \x1b[2J\"x\""`) {
		t.Errorf("explanation = %q", v.Explanation)
	}
	if v = f.eval("", "bash", "ls plain"); !strings.Contains(v.Explanation, `"ls plain"`) {
		t.Errorf("explanation = %q", v.Explanation)
	}
}
