package resolve

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unicode/utf8"

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

// unprintable reports a character that must not reach a terminal unescaped.
func unprintable(s string) (rune, bool) {
	if !utf8.ValidString(s) {
		return utf8.RuneError, true
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return r, true
		}
	}
	return 0, false
}

// Every string from a request or a config reaches the explanation escaped:
// surfaces, patterns, values, grant surfaces, floors, file paths, agent names.
func TestExplanationsAndProblemsArePrintable(t *testing.T) {
	f := newFixture(t)
	evil := "x\x1b]0;pwn\x07\u202e\xff"
	// A surface key and an agents directory whose names carry control characters.
	f.global(`{"permission":{"*":"deny","b\u001bsh":"allow","bash":{"*":"allow"}}}`)
	f.opts.ProjectDir = filepath.Join(t.TempDir(), "proj\x1b[2J")
	f.project(`{"yoloMode":true,"permission":{"skill":{"*":"allow"}}}`)
	// An agent file that is a FIFO: refused, so it becomes a problem.
	agentFile := filepath.Join(f.opts.ProjectDir, ".pi", "agents", "ag\x1bent.md")
	if err := os.MkdirAll(filepath.Dir(agentFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(agentFile, 0o600); err != nil {
		t.Fatal(err)
	}
	p := Load(f.opts)
	floor := evil
	queries := []Query{
		{Surface: "b\x1bsh", Values: []string{evil}},
		{Surface: evil, Values: []string{evil}},
		{Surface: "bash", Values: []string{evil}, Floor: &floor},
		{Surface: "skill", Values: []string{evil}},
		{Surface: "frob", Values: nil, Floor: &floor},
		{Agent: "ag\x1bent", Surface: "read", Values: []string{evil}},
		{Surface: "bash", AskingUnits: []wire.AskingUnit{{Command: evil, Floor: &floor}}},
	}
	grants := [][]wire.Grant{nil, {{Surface: evil, Pattern: evil}}, {{Surface: "b*", Pattern: "*"}}}
	for _, q := range queries {
		for _, g := range grants {
			v := p.Evaluate(q, g)
			if r, bad := unprintable(v.Explanation); bad {
				t.Errorf("%+v with grants %q: explanation carries %U: %q", q, g, r, v.Explanation)
			}
		}
	}
	req := &wire.Request{Dropped: []wire.DroppedField{{Field: "accessIntent", Reason: evil}}}
	if v := p.Resolve(req, nil); !strings.Contains(v.Explanation, "dropped") {
		t.Errorf("explanation %q does not say the intent was dropped", v.Explanation)
	} else if r, bad := unprintable(v.Explanation); bad {
		t.Errorf("dropped-intent explanation carries %U: %q", r, v.Explanation)
	}
	if len(p.Problems()) == 0 {
		t.Error("the unreadable agent file is not a problem")
	}
	for _, pr := range p.Problems() {
		if r, bad := unprintable(pr.Message); bad {
			t.Errorf("problem message carries %U: %q", r, pr.Message)
		}
	}
}

// The floor's sentence names the cause once, without repeating what the
// floor does.
func TestFloorExplanationNamesTheCauseOnce(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"allow"}}`)
	file := f.project(`{"permission":{"bash":"sometimes"}}`)
	v := f.eval("", "bash", "ls")
	want := "because " + file + ` could not be used (rejected: permission["bash"] is "sometimes", not allow, ask or deny).`
	if !strings.HasSuffix(v.Explanation, want) || strings.Count(v.Explanation, "fail-closed floor") != 1 {
		t.Errorf("explanation = %q, want it to end %q", v.Explanation, want)
	}
}

type evalCase struct {
	agent, surface string
	values         []string
	grants         []wire.Grant
	want           Action
	origin         string
	pattern        string // as deref reports it: "<nil>" = none
}

func (c evalCase) check(t *testing.T, p *Policy, name string) {
	t.Helper()
	v := p.Evaluate(Query{Agent: c.agent, Surface: c.surface, Values: c.values}, c.grants)
	if v.Action != c.want || (c.origin != "" && v.Origin != c.origin) || deref(v.Pattern) != c.pattern {
		t.Errorf("%s: %s %q = %s/%s pattern %q, want %s/%s pattern %q", name, c.surface, c.values, v.Action, v.Origin, deref(v.Pattern), c.want, c.origin, c.pattern)
	}
}

// §6.4: skill is judged on its first value, "" when there is none (not "*");
// other surfaces on the literal "*"; path and mcp on ["*"] when empty.
func TestValueMappingPerSurface(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"deny","skill":{"?":"allow"},"task":{"?":"allow"},"read":{"?":"allow"},"mcp":{"?":"allow"}}}`)
	p := Load(f.opts)
	for name, c := range map[string]evalCase{
		"skill without values is the empty name": {surface: "skill", want: Deny, origin: OriginGlobal, pattern: "<nil>"},
		"skill uses only the first value":        {surface: "skill", values: []string{"ab", "c"}, want: Deny, origin: OriginGlobal, pattern: "<nil>"},
		"skill one character":                    {surface: "skill", values: []string{"c"}, want: Allow, pattern: "?"},
		"other surfaces judge *":                 {surface: "task", values: []string{"long value"}, want: Allow, pattern: "?"},
		"path surfaces: empty becomes *":         {surface: "read", want: Allow, pattern: "?"},
		"mcp: empty becomes *":                   {surface: "mcp", want: Allow, pattern: "?"},
		"bash comment-only text stays raw":       {surface: "bash", values: []string{"# c"}, want: Deny, origin: OriginGlobal, pattern: "<nil>"},
	} {
		c.check(t, p, name)
	}
}

// §4.4: the MCP baseline exists only when a config rule on exactly "mcp"
// allows, sits under every config rule, and is floored and re-allowed by
// yolo like any other allow.
func TestMCPBaseline(t *testing.T) {
	for name, tc := range map[string]struct {
		global, project string
		want            Action
		origin          string
	}{
		"an allow on another surface does not": {global: `{"*":"deny","bash":"allow"}`, want: Deny, origin: OriginGlobal},
		"wildcard surface allow does not":      {global: `{"*":"deny","mc?":{"x":"allow"}}`, want: Deny, origin: OriginGlobal},
		"a relocated Pi MCP rule does not":     {global: `{"*":"deny","mcp__s__t":"allow"}`, want: Deny, origin: OriginGlobal},
		"an mcp allow on another pattern does": {global: `{"*":"deny","mcp":{"x":"allow"}}`, want: Allow, origin: OriginBaseline},
		"floored with the default":             {global: `{"*":"allow","mcp":{"x":"allow"}}`, project: `{"permission":{"bash":"maybe"}}`, want: Ask, origin: OriginFailClosed},
		"yolo re-allows the floored baseline":  {global: `{"*":"deny","mcp":{"x":"allow"}}`, project: `{"yoloMode":true,"x":1}`, want: Allow, origin: OriginYolo},
	} {
		f := newFixture(t)
		f.global(`{"permission":` + tc.global + `}`)
		if tc.project != "" {
			f.project(tc.project)
		}
		if name == "yolo re-allows the floored baseline" {
			// The invalid project file cannot carry yoloMode; set it globally.
			f.global(`{"yoloMode":true,"permission":` + tc.global + `}`)
		}
		evalCase{surface: "mcp", values: []string{"mcp_list"}, want: tc.want, origin: tc.origin, pattern: "<nil>"}.check(t, Load(f.opts), name)
	}
}

// §4.3: the fallback's origin is the scope that set it; an object under
// "*" in a higher scope replaces a lower string and leaves the built-in ask.
func TestUniversalFallbackOrigin(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"deny"}}`)
	f.agent("a", "---\npermission:\n  \"*\": allow\n---\n")
	f.agent("b", "---\npermission:\n  \"*\":\n    x: allow\n---\n")
	f.project(`{"permission":{"bash":"ask"}}`)
	p := Load(f.opts)
	evalCase{surface: "skill", values: []string{"s"}, want: Deny, origin: OriginGlobal, pattern: "<nil>"}.check(t, p, "global")
	evalCase{agent: "a", surface: "skill", values: []string{"s"}, want: Allow, origin: OriginAgent, pattern: "<nil>"}.check(t, p, "agent string")
	evalCase{agent: "b", surface: "skill", values: []string{"s"}, want: Ask, origin: OriginBuiltin, pattern: "<nil>"}.check(t, p, "agent object")
}

// §8: session grants come after every rule, are never floored, and a grant
// on a bare family covers both members, on any agent.
func TestSessionGrantsUnderFloorAndAgents(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"deny","external_directory":{"*":"deny"}}}`)
	f.project(`{"permission":{"path_wrote":"deny"}}`)
	f.agent("a", "---\npermission:\n  external_directory_write: deny\n---\n")
	p := Load(f.opts)
	g := []wire.Grant{{Surface: "external_directory", Pattern: "~/o/*"}}
	for _, agent := range []string{"", "a", "nofile"} {
		for _, s := range []string{"external_directory", "external_directory_read", "external_directory_write"} {
			evalCase{agent: agent, surface: s, values: []string{"/home/u/o/x"}, grants: g, want: Allow, origin: OriginSession, pattern: "~/o/*"}.check(t, p, "grant "+agent)
		}
	}
	evalCase{surface: "external_directory", values: []string{"/home/u/p/x"}, grants: g, want: Deny, origin: OriginGlobal, pattern: "*"}.check(t, p, "outside the grant")
}

// §4.4 item 4: only keys that can name a Pi MCP tool are copied onto mcp.
func TestPiMCPRelocationKeys(t *testing.T) {
	for key, relocated := range map[string]bool{
		"mcp__srv__tool": true, "mcp__srv__*": true, "mcp__*": true, "mcp__s?": true,
		"mcp__srv": false, "mcp____tool": false, "mcp__srv__": false, "mcp_srv__tool": false,
	} {
		f := newFixture(t)
		f.global(`{"permission":{"*":"ask","` + key + `":"deny"}}`)
		want := Ask
		if relocated {
			want = Deny
		}
		evalCase{surface: "mcp", values: []string{key}, want: want, pattern: map[bool]string{true: key, false: "<nil>"}[relocated]}.check(t, Load(f.opts), key)
	}
}

// Each asking unit is judged with its own floor; grants and yolo act per
// unit before the most restrictive unit answers.
func TestAskingUnitsWithGrantsYoloAndFloors(t *testing.T) {
	floor := "<indirection-bash-wrapper>"
	units := []wire.AskingUnit{{Command: "npm test"}, {Command: "xargs ls", Floor: &floor}}
	grants := []wire.Grant{{Surface: "bash", Pattern: "npm *"}}

	f := newFixture(t)
	f.global(`{"permission":{"bash":{"*":"allow","rm *":"deny"}}}`)
	p := Load(f.opts)
	v := p.Evaluate(Query{Surface: "bash", AskingUnits: units}, grants)
	if v.Action != Ask || v.Unit != "xargs ls" || v.Floor != floor {
		t.Errorf("floored unit under a rule allow: %s unit %q floor %q, want ask from xargs ls", v.Action, v.Unit, v.Floor)
	}
	v = p.Evaluate(Query{Surface: "bash", AskingUnits: append(units, wire.AskingUnit{Command: "rm -rf /", Floor: &floor})}, grants)
	if v.Action != Deny || v.Unit != "rm -rf /" {
		t.Errorf("a denied unit: %s unit %q, want deny", v.Action, v.Unit)
	}
	// Granted units keep their allow whatever their floor.
	v = p.Evaluate(Query{Surface: "bash", AskingUnits: units}, append(grants, wire.Grant{Surface: "bash", Pattern: "xargs *"}))
	if v.Action != Allow || v.Origin != OriginSession {
		t.Errorf("all units granted: %s/%s, want allow/session", v.Action, v.Origin)
	}

	f.global(`{"yoloMode":true,"permission":{"bash":{"*":"ask","rm *":"deny"}}}`)
	p = Load(f.opts)
	v = p.Evaluate(Query{Surface: "bash", AskingUnits: units}, nil)
	if v.Action != Allow || v.Origin != OriginYolo {
		t.Errorf("yolo: %s/%s, want allow/yolo", v.Action, v.Origin)
	}
	if v = p.Evaluate(Query{Surface: "bash", AskingUnits: append(units, wire.AskingUnit{Command: "rm x"})}, nil); v.Action != Deny {
		t.Errorf("yolo never lifts a deny: %s", v.Action)
	}
}

// A verdict yoloMode decides names it (Yolo), for explanations that name
// the deciding rule: an ask rule turned allow, an allow kept past a floor.
// A verdict yoloMode did not decide has none.
func TestAVerdictNamesTheYoloModeThatDecided(t *testing.T) {
	f := newFixture(t)
	file := f.global(`{"yoloMode":true,"permission":{"bash":{"*":"ask","ls *":"allow","rm *":"deny"}}}`)
	p := Load(f.opts)
	want := "yoloMode true in " + file
	floor := "<indirection-bash-wrapper>"
	for _, c := range []struct {
		q    Query
		yolo string
	}{
		{Query{Surface: "bash", Values: []string{"npm test"}}, want},
		{Query{Surface: "bash", Values: []string{"ls x"}, Floor: &floor}, want},
		{Query{Surface: "bash", Values: []string{"ls x"}}, ""},
		{Query{Surface: "bash", Values: []string{"rm x"}}, ""},
	} {
		if v := p.Evaluate(c.q, nil); v.Yolo != c.yolo {
			t.Errorf("%v: Yolo %q (%s/%s), want %q", c.q.Values, v.Yolo, v.Action, v.Origin, c.yolo)
		}
	}
}

// pi trims the name of a surface it judges as a tool (not a path surface or
// mcp), so " bash " is bash; a padded family name is not folded. The input
// is built from the surface as sent (decision 0173), so a padded bash has
// the command "" and a padded skill the name "*", whatever the values.
func TestPaddedToolSurfacesAreTrimmed(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"allow","bash":{"rm *":"deny"},"skill":{"x":"deny"},"path":"deny"}}`)
	p := Load(f.opts)
	for name, c := range map[string]evalCase{
		"bash":          {surface: " bash\t", values: []string{"rm -rf x"}, want: Allow, origin: OriginGlobal, pattern: "<nil>"},
		"skill":         {surface: "skill ", values: []string{"x"}, want: Allow, origin: OriginGlobal, pattern: "<nil>"},
		"padded family": {surface: " path", values: []string{"/x"}, want: Allow, origin: OriginGlobal, pattern: "<nil>"},
	} {
		c.check(t, p, name)
	}
	if v := p.Evaluate(Query{Surface: " bash\t", Values: []string{"rm x"}}, nil); v.Surface != " bash\t" {
		t.Errorf("verdict surface = %q, want the forwarded surface", v.Surface)
	}
}

func TestCoversFailsClosed(t *testing.T) {
	p := &Policy{}
	req := func(surface string, values []string, units ...string) *wire.Request {
		ai := &wire.AccessIntent{Surface: surface, MatchValues: values}
		for _, u := range units {
			ai.AskingUnits = append(ai.AskingUnits, wire.AskingUnit{Command: u})
		}
		return &wire.Request{AccessIntent: ai}
	}
	rm := wire.Grant{Surface: "bash", Pattern: "rm *"}
	cases := []struct {
		name string
		req  *wire.Request
		g    wire.Grant
		want bool
	}{
		{"value", req("bash", []string{"rm -rf /"}), rm, true},
		{"other command", req("bash", []string{"ls"}), rm, false},
		{"comment line", req("bash", []string{"# tidy\nrm -rf /"}), rm, true},
		{"second value", req("path_write", []string{"/a/x", "/b/y"}), wire.Grant{Surface: "path_write", Pattern: "/b/*"}, true},
		{"chain unit", req("bash", []string{"ls && rm x"}, "ls", "rm x"), rm, true},
		{"other surface", req("path_read", []string{"rm x"}), rm, false},
		{"family grant", req("path_read", []string{"/b/y"}), wire.Grant{Surface: "path", Pattern: "/b/*"}, true},
		{"bare family query", req("path", []string{"/b/y"}), wire.Grant{Surface: "path_write", Pattern: "/b/*"}, true},
		{"no facts", &wire.Request{}, rm, false},
	}
	for _, c := range cases {
		if got := p.Covers(c.req, c.g); got != c.want {
			t.Errorf("%s: Covers = %v, want %v", c.name, got, c.want)
		}
	}
}

// A request's lone surrogates reach the matcher as JSON.parse keeps them
// (decision 0175): not U+FFFD, and matched by UTF-16 unit.
func TestLoneSurrogatesInRequestValues(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":{"*":"deny","\ufffd":"allow","\ud800":"allow","a?":"allow","x\ud83d*":"allow"}}}`)
	p := Load(f.opts)
	for value, want := range map[string]Action{
		`\ud83d`:        Deny,  // not U+FFFD, not \ud800
		`\ud800`:        Allow, // the rule's own lone surrogate
		`\ufffd`:        Allow,
		`a\ud83d`:       Allow, // one unit for ?
		`a\ud83d\ude00`: Deny,  // two units
		`x\ud83d\ude00`: Allow, // the pair's first half
		`x\ude00`:       Deny,
	} {
		req, err := wire.ParseRequest([]byte(`{"id":"r1","createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a",` +
			`"accessIntent":{"surface":"bash","matchValues":["` + value + `"],"boundaryValue":null,"requesterCwd":"/w","principal":{"sessionId":"s","agentName":""}}}`))
		if err != nil || req.AccessIntent == nil {
			t.Fatalf("%s: %+v %v", value, req, err)
		}
		if v := p.Resolve(req, nil); v.Action != want {
			t.Errorf("%s: %s, want %s\n%s", value, v.Action, want, v.Explanation)
		}
	}
}
