package resolve

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/permtui/permtui/internal/jsonparse"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// fixture lays out an agent dir and a project dir under t.TempDir().
type fixture struct {
	t    *testing.T
	opts LoadOptions
}

func newFixture(t *testing.T) *fixture {
	root := t.TempDir()
	return &fixture{t: t, opts: LoadOptions{
		AgentDir: filepath.Join(root, "agent"), ProjectDir: filepath.Join(root, "proj"), TrustProject: true, Home: "/home/u",
	}}
}

func (f *fixture) global(text string) string {
	p := GlobalConfigPath(f.opts.AgentDir)
	testkit.WriteFile(f.t, p, []byte(text))
	return p
}

func (f *fixture) project(text string) string {
	p := ProjectConfigPaths(f.opts.ProjectDir)[0]
	testkit.WriteFile(f.t, p, []byte(text))
	return p
}

func (f *fixture) projectLocal(text string) string {
	p := ProjectConfigPaths(f.opts.ProjectDir)[1]
	testkit.WriteFile(f.t, p, []byte(text))
	return p
}

func (f *fixture) agent(name, text string) string {
	p := filepath.Join(f.opts.AgentDir, "agents", name+".md")
	testkit.WriteFile(f.t, p, []byte(text))
	return p
}

func (f *fixture) eval(agent, surface string, values ...string) Verdict {
	return Load(f.opts).Evaluate(Query{Agent: agent, Surface: surface, Values: values}, nil)
}

func TestInvalidProjectFileSetsFailClosedFloor(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"allow","bash":{"*":"allow","rm *":"deny"},"read":"allow"}}`)
	file := f.project(`{"permission":{"path_wrote":"allow"}}`)
	p := Load(f.opts)
	probs := p.Problems()
	if len(probs) != 1 || probs[0].File != file || !probs[0].FailClosed || !strings.Contains(probs[0].Message, "path_wrote") {
		t.Fatalf("problems = %+v, want one fail-closed problem naming path_wrote in %s", probs, file)
	}
	for _, c := range []struct {
		surface, value string
		want           Action
	}{{"bash", "ls", Ask}, {"bash", "rm x", Deny}, {"read", "/x", Ask}, {"skill", "s", Ask}} {
		v := p.Evaluate(Query{Surface: c.surface, Values: []string{c.value}}, nil)
		if v.Action != c.want {
			t.Errorf("%s %q = %s, want %s", c.surface, c.value, v.Action, c.want)
		}
		if c.want == Ask && (v.Origin != OriginFailClosed || !strings.Contains(v.Explanation, file)) {
			t.Errorf("%s %q: origin %q, explanation %q; want fail-closed naming %s", c.surface, c.value, v.Origin, v.Explanation, file)
		}
	}
	// Session grants are never floored.
	v := p.Evaluate(Query{Surface: "bash", Values: []string{"ls"}}, []wire.Grant{{Surface: "bash", Pattern: "ls"}})
	if v.Action != Allow || v.Origin != OriginSession {
		t.Errorf("grant under the floor = %s/%s, want allow/session", v.Action, v.Origin)
	}
}

func TestInvalidGlobalFileSetsNoFloor(t *testing.T) {
	f := newFixture(t)
	file := f.global(`{"permission":{"bash":"allow",}}`)
	f.project(`{"permission":{"read":"allow"}}`)
	p := Load(f.opts)
	probs := p.Problems()
	if len(probs) != 1 || probs[0].File != file || probs[0].FailClosed {
		t.Fatalf("problems = %+v, want one problem that is not fail-closed", probs)
	}
	if v := p.Evaluate(Query{Surface: "read", Values: []string{"/x"}}, nil); v.Action != Allow || v.Origin != OriginProject {
		t.Errorf("read = %s/%s, want allow/project", v.Action, v.Origin)
	}
	if v := p.Evaluate(Query{Surface: "bash", Values: []string{"ls"}}, nil); v.Action != Ask {
		t.Errorf("bash = %s, want ask (the invalid global file contributes nothing)", v.Action)
	}
}

func TestSymlinkedPolicyFilesAreFollowed(t *testing.T) {
	f := newFixture(t)
	target := filepath.Join(t.TempDir(), "dotfiles", "config.json")
	testkit.WriteFile(t, target, []byte(`{"permission":{"bash":{"git *":"allow"}}}`))
	link := ProjectConfigPaths(f.opts.ProjectDir)[0]
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	p := Load(f.opts)
	if probs := p.Problems(); len(probs) != 0 {
		t.Fatalf("problems = %+v, want none for a config kept as a symlink", probs)
	}
	if v := p.Evaluate(Query{Surface: "bash", Values: []string{"git log"}}, nil); v.Action != Allow || v.Origin != "project" {
		t.Errorf("bash = %s/%s, want allow/project from the linked file", v.Action, v.Origin)
	}
}

func TestUnreadableProjectFileSetsFloor(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"allow"}}`)
	// A FIFO is never read (it could block the loader for ever): the file is
	// there but unreadable, so the project scope fails closed.
	link := ProjectConfigPaths(f.opts.ProjectDir)[1]
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(link, 0o600); err != nil {
		t.Fatal(err)
	}
	p := Load(f.opts)
	if probs := p.Problems(); len(probs) != 1 || probs[0].File != link || !probs[0].FailClosed {
		t.Fatalf("problems = %+v, want the FIFO config.local.json as a fail-closed problem", probs)
	}
	if v := p.Evaluate(Query{Surface: "bash", Values: []string{"ls"}}, nil); v.Action != Ask || v.Origin != OriginFailClosed {
		t.Errorf("bash = %s/%s, want ask/fail-closed", v.Action, v.Origin)
	}
}

func TestOversizedAgentFileFloorsOnlyThatAgent(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"allow"}}`)
	f.agent("big", "---\npermission:\n  bash: allow\n---\n"+strings.Repeat("x", maxPolicyFileSize))
	f.agent("ok", "---\npermission:\n  bash: allow\n---\n")
	p := Load(f.opts)
	// pi reads the big file: its agent's asks are denied by the judgment
	// (decision 0177); here the agent has no rules of its own.
	if probs := p.Problems(); len(probs) != 1 || !probs[0].Unheld || probs[0].Agent != "big" || !strings.HasSuffix(probs[0].File, "big.md") {
		t.Fatalf("problems = %+v", probs)
	}
	for agent, want := range map[string]Action{"big": Allow, "ok": Allow, "": Allow, "other": Allow} {
		if v := p.Evaluate(Query{Agent: agent, Surface: "bash", Values: []string{"ls"}}, nil); v.Action != want {
			t.Errorf("agent %q: %s, want %s", agent, v.Action, want)
		}
	}
}

func TestUntrustedProjectIsLeftOut(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	f.project(`{"permission":{"bash":"allow"}}`)
	testkit.WriteFile(t, filepath.Join(f.opts.ProjectDir, ".pi", "agents", "a.md"), []byte("---\npermission:\n  bash: allow\n---\n"))
	f.opts.TrustProject = false
	p := Load(f.opts)
	if v := p.Evaluate(Query{Agent: "a", Surface: "bash", Values: []string{"ls"}}, nil); v.Action != Ask {
		t.Errorf("untrusted project: bash = %s, want ask", v.Action)
	}
	for _, w := range p.WatchPaths() {
		if strings.HasPrefix(w, f.opts.ProjectDir) {
			t.Errorf("untrusted project path %s is watched", w)
		}
	}
}

// TestAHeldProjectIsReadWithItsPolicyBeside: with the project's allows held
// (decision 0206) the project's files are read and watched, listed as the
// project's, and the policy without them is kept beside; a trusted or
// left-out project keeps none.
func TestAHeldProjectIsReadWithItsPolicyBeside(t *testing.T) {
	f := newFixture(t)
	global := f.global(`{"permission":{"bash":"ask"}}`)
	project := f.project(`{"permission":{"bash":"allow"}}`)
	agent := filepath.Join(f.opts.ProjectDir, ".pi", "agents", "a.md")
	testkit.WriteFile(t, agent, []byte("---\npermission:\n  bash: allow\n---\n"))
	f.opts.HoldProjectAllows = true
	p := Load(f.opts)
	if got := p.ProjectFiles(); !slices.Equal(got, []string{project, agent}) {
		t.Errorf("project files %v, want %v", got, []string{project, agent})
	}
	if v := p.Evaluate(Query{Agent: "a", Surface: "bash", Values: []string{"ls"}}, nil); v.Action != Allow {
		t.Errorf("held project: pi's verdict %s, want allow", v.Action)
	}
	out := p.WithoutProject()
	if out == nil {
		t.Fatal("no policy without the held project")
	}
	if !slices.Equal(out.Files(), []string{global}) || len(out.ProjectFiles()) > 0 || out.WithoutProject() != nil {
		t.Errorf("without the project: files %v, project files %v", out.Files(), out.ProjectFiles())
	}
	if v := out.Evaluate(Query{Agent: "a", Surface: "bash", Values: []string{"ls"}}, nil); v.Action != Ask {
		t.Errorf("without the project: %s, want ask", v.Action)
	}
	if !slices.Contains(p.WatchPaths(), project) {
		t.Errorf("held project's %s is not watched", project)
	}
	f.opts.HoldProjectAllows = false
	if Load(f.opts).WithoutProject() != nil {
		t.Error("a trusted project keeps a policy without it")
	}
	empty := f.opts
	empty.ProjectDir, empty.HoldProjectAllows = t.TempDir(), true
	if Load(empty).WithoutProject() != nil {
		t.Error("a project without policy files keeps a policy without it")
	}
	f.opts.TrustProject, f.opts.HoldProjectAllows = false, true
	if p := Load(f.opts); p.WithoutProject() != nil || len(p.ProjectFiles()) > 0 {
		t.Error("a left-out project keeps a policy without it, or lists its files")
	}
}

func TestConfigLocalMergesInsideProjectScope(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":{"*":"ask"}}}`)
	f.project(`{"permission":{"bash":{"git *":"allow","rm *":"deny"}}}`)
	f.projectLocal(`{"permission":{"bash":{"git *":"deny","npm *":"allow"}}}`)
	for value, want := range map[string]Action{"git status": Deny, "rm x": Deny, "npm i": Allow, "ls": Ask} {
		if v := f.eval("", "bash", value); v.Action != want {
			t.Errorf("bash %q = %s, want %s", value, v.Action, want)
		}
	}
	if v := f.eval("", "bash", "git status"); v.Origin != OriginProject || !strings.Contains(v.Explanation, "config.local.json") {
		t.Errorf("git status: origin %q, explanation %q; want project from config.local.json", v.Origin, v.Explanation)
	}
}

func TestYoloScopes(t *testing.T) {
	f := newFixture(t)
	f.global(`{"yoloMode":true,"permission":{"bash":"ask"}}`)
	if v := f.eval("", "bash", "ls"); v.Action != Allow || v.Origin != OriginYolo {
		t.Fatalf("global yolo: %s/%s", v.Action, v.Origin)
	}
	f.project(`{"yoloMode":false}`)
	if v := f.eval("", "bash", "ls"); v.Action != Ask {
		t.Errorf("project yoloMode false should override the global true: %s", v.Action)
	}
	f.project(`{"yoloMode":"yes"}`)
	p := Load(f.opts)
	if !p.yolo || len(p.Problems()) != 1 || !p.Problems()[0].FailClosed {
		t.Errorf("a non-boolean yoloMode rejects the project file: yolo=%v problems=%+v", p.yolo, p.Problems())
	}
}

func TestAgentNamesNeverReachOutsideTheAgentDirs(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	// A file that a path-like agent name could point at.
	testkit.WriteFile(t, filepath.Join(f.opts.AgentDir, "evil.md"), []byte("---\npermission:\n  bash: allow\n---\n"))
	testkit.WriteFile(t, filepath.Join(f.opts.AgentDir, "agents", "sub", "x.md"), []byte("---\npermission:\n  bash: allow\n---\n"))
	for _, name := range []string{"../evil", "sub/x", "..", "/etc/passwd", "./../evil", "sub"} {
		if v := f.eval(name, "bash", "ls"); v.Action != Ask {
			t.Errorf("agent %q: %s, want ask (no agent file)", name, v.Action)
		}
	}
	if got := Load(f.opts).Agents(); len(got) != 0 {
		t.Errorf("agents = %v, want none", got)
	}
}

func TestJSONCStripping(t *testing.T) {
	cases := map[string]string{
		"a // c\nb":             "a \nb",
		"a /* c */ b":           "a  b",
		"a /* never closed":     "a ",
		`"x // y" // z`:         `"x // y" `,
		`'it''s' /* x */`:       `'it''s' `,
		`"a \" // b" // c`:      `"a \" // b" `,
		`"unterminated // x`:    `"unterminated // x`,
		"x // no newline":       "x ",
		`"/* not a comment */"`: `"/* not a comment */"`,
		`'/* kept */' // gone`:  `'/* kept */' `,
		`"a\\" // c`:            `"a\\" `,
		`"it's" // c`:           `"it's" `,
		"/* a // b \" c */x":    "x",
		"*/ stays":              "*/ stays",
		"a/b":                   "a/b",
		"a /* x\n y */\nb":      "a \nb",
	}
	for in, want := range cases {
		if got := stripJSONComments(in); got != want {
			t.Errorf("strip(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONObjectOrder(t *testing.T) {
	v, err := parseJSON(`{"b":1,"10":2,"a":3,"2":4,"b":5,"01":6,"4294967294":7,"4294967295":8,"-1":9}`)
	if err != nil {
		t.Fatal(err)
	}
	// The reader keeps first-seen order; the policy's maps put it in JavaScript's.
	o := newOrdered[jsonparse.Value]()
	for _, m := range v.Members() {
		o.set(m.Key, m.Value)
	}
	want := []string{"2", "10", "4294967294", "b", "a", "01", "4294967295", "-1"}
	if keys, _ := o.all(); strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("keys = %v, want %v", keys, want)
	}
	if b := v.Get("b"); b.Str != "5" {
		t.Errorf("duplicate b = %s, want the last value 5", b.Str)
	}
	for _, bad := range []string{`{"a":1,}`, `[1,]`, `{a:1}`, `{"a":01}`, `{"a":"\x"}`, "\ufeff{}", `{"a":1} x`, `{"a":"` + "\t" + `"}`, `'a'`, ``} {
		if _, err := parseJSON(bad); err == nil {
			t.Errorf("parseJSON(%q) accepted invalid JSON", bad)
		}
	}
	s, err := parseJSON(`"\ud83d\ude00 \u00e9 \ud800 \/"`)
	if err != nil || s.Str != "😀 é \xed\xa0\x80 /" { // the lone \ud800 kept (decision 0175)
		t.Errorf("string escapes = %q, %v", s.Str, err)
	}
}

func TestSchemaRejections(t *testing.T) {
	bad := []string{
		`[]`, `{"permission":[]}`, `{"permission":{"":"allow"}}`, `{"permission":{"bash":{"":"allow"}}}`,
		`{"permission":{"bash":["allow"]}}`, `{"permission":{"bash":{"x":{"action":"allow"}}}}`,
		`{"permission":{"bash":{"x":{"reason":"r"}}}}`, `{"permission":{"bash":{"x":{"action":"deny","reason":1}}}}`,
		`{"permission":{"bash":{"x":{"action":"deny","reason":"` + strings.Repeat("r", 501) + `"}}}}`,
		`{"permission":{"external_directory_rw":"allow"}}`, `{"permission":{"path_":"allow"}}`, `{"nope":1}`,
	}
	for _, text := range bad {
		if _, err := parseConfig(text, OriginGlobal, "f"); err == nil {
			t.Errorf("parseConfig accepted %s", text)
		}
	}
	good := `{"$schema":"x","commandEffects":{},"permission":{"*":{"foo":"deny"},"path_read":"allow","bash":{"x":{"action":"deny","reason":"` + strings.Repeat("é", 500) + `"}}}}`
	if _, err := parseConfig(good, OriginGlobal, "f"); err != nil {
		t.Errorf("parseConfig rejected a valid file: %v", err)
	}
}

func TestFrontmatterDialect(t *testing.T) {
	text := "---\n" +
		"permission:\n" +
		"  # a comment\n" +
		"  bash:\n" +
		"    'git *': allow\n" +
		"    \"rm *\": 'deny'\n" +
		"    x: maybe\n" +
		"  \"skill\": deny\n" +
		"  read:\n" +
		"  7: ask\n" +
		"  mcp:\n" +
		"    a:b: allow\n" +
		"other: 1\n" +
		"---\n"
	perms := agentPermissions(text, OriginAgent, "a.md")
	if keys, _ := perms.all(); strings.Join(keys, ",") != "7,bash,skill" {
		t.Fatalf("surfaces = %s, want 7,bash,skill (empty read and invalid mcp maps dropped, 7 first)", keys)
	}
	bash, _ := perms.get("bash")
	if keys, _ := bash.patterns.all(); strings.Join(keys, ",") != "git *,rm *" {
		t.Errorf("bash patterns = %s", keys)
	}
	if rm, _ := bash.patterns.get("rm *"); rm.action != Deny {
		t.Errorf("rm * = %s", rm.action)
	}
	for _, text := range []string{"", "---\npermission:\n  bash: allow\n", " ---\npermission:\n  bash: allow\n---\n", "---\npermission: allow\n---\n"} {
		if agentPermissions(text, OriginAgent, "a.md").Len() != 0 {
			t.Errorf("%q should give no permissions", text)
		}
	}
}

func TestDirectionalSugarAndRelocation(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"deny","mcp__srv__tool":"allow","path":{"*":"ask"},"path_write":{"/tmp/*":"allow"}}}`)
	if v := f.eval("", "mcp", "mcp__srv__tool"); v.Action != Allow || deref(v.Pattern) != "mcp__srv__tool" {
		t.Errorf("relocated Pi MCP tool rule: %s %s", v.Action, deref(v.Pattern))
	}
	if v := f.eval("", "mcp__srv__tool"); v.Action != Allow {
		t.Errorf("the original tool rule stays: %s", v.Action)
	}
	if v := f.eval("", "path_write", "/tmp/x"); v.Action != Allow {
		t.Errorf("path_write /tmp/x = %s", v.Action)
	}
	if v := f.eval("", "path", "/tmp/x"); v.Action != Ask || v.Member != "path_read" {
		t.Errorf("path /tmp/x = %s via %s, want ask via path_read", v.Action, v.Member)
	}
}

func TestUnlistableAgentsDirFloorsEveryAgent(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"allow"}}`)
	testkit.WriteFile(t, filepath.Join(f.opts.ProjectDir, ".pi", "agents", "a.md"), []byte("---\npermission:\n  bash: allow\n---\n"))
	testkit.WriteFile(t, filepath.Join(f.opts.AgentDir, "agents"), []byte("not a directory"))
	p := Load(f.opts)
	if probs := p.Problems(); len(probs) != 1 || !probs[0].FailClosed || probs[0].File != filepath.Join(f.opts.AgentDir, "agents") {
		t.Fatalf("problems = %+v", probs)
	}
	for agent, want := range map[string]Action{"a": Ask, "nofile": Ask, "": Allow} {
		if v := p.Evaluate(Query{Agent: agent, Surface: "bash", Values: []string{"ls"}}, nil); v.Action != want {
			t.Errorf("agent %q: %s, want %s", agent, v.Action, want)
		}
	}
}

// ordered must agree with JavaScript property order however keys arrive,
// including keys added after the order was read.
func TestOrderedMatchesJavaScriptOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pool := []string{"0", "1", "2", "7", "10", "01", "00", "4294967294", "4294967295", "-1", "1.5", "*", "a", "b", "git *", ""}
	for range 2000 {
		o := newOrdered[int]()
		type slot struct {
			key string
			val int
		}
		var model []slot // first-insertion order, last value
		for step := range 1 + rng.IntN(12) {
			k := pool[rng.IntN(len(pool))]
			o.set(k, step)
			if i := slices.IndexFunc(model, func(s slot) bool { return s.key == k }); i >= 0 {
				model[i].val = step
			} else {
				model = append(model, slot{k, step})
			}
			if rng.IntN(4) == 0 {
				o.all() // reading in between must not disturb later inserts
			}
		}
		var want []slot
		for _, s := range model {
			if _, ok := ArrayIndex(s.key); ok {
				want = append(want, s)
			}
		}
		slices.SortFunc(want, func(a, b slot) int {
			x, _ := ArrayIndex(a.key)
			y, _ := ArrayIndex(b.key)
			return cmp.Compare(x, y)
		})
		for _, s := range model {
			if _, ok := ArrayIndex(s.key); !ok {
				want = append(want, s)
			}
		}
		keys, vals := o.all()
		for i, s := range want {
			if i >= len(keys) || keys[i] != s.key || vals[i] != s.val {
				t.Fatalf("order = %q %v, want %+v", keys, vals, want)
			}
		}
		if len(keys) != len(want) {
			t.Fatalf("order = %q, want %+v", keys, want)
		}
		for _, s := range want {
			if v, ok := o.get(s.key); !ok || v != s.val {
				t.Fatalf("get(%q) = %v %v, want %v", s.key, v, ok, s.val)
			}
		}
	}
}

// The largest file the loader accepts, with every key in the worst order for
// an insertion-sorted map: 1 MiB of integer keys, descending, after string
// keys. (Inserting in place made this take minutes.)
func TestLargestConfigWithDescendingIntegerKeysLoads(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"permission":{"bash":{"*":"ask","git *":"allow"`)
	n := 0
	for i := 99999; b.Len() < maxPolicyFileSize-64; i-- {
		b.WriteString(`,"` + strconv.Itoa(i) + `":"deny"`)
		n++
	}
	b.WriteString(`}}}`)
	f := newFixture(t)
	f.global(b.String())
	p := Load(f.opts)
	if probs := p.Problems(); len(probs) != 0 {
		t.Fatalf("problems = %+v", probs)
	}
	// Integer keys come first, so the string patterns written first win.
	if v := p.Evaluate(Query{Surface: "bash", Values: []string{"99999"}}, nil); v.Action != Ask || deref(v.Pattern) != "*" {
		t.Errorf("bash 99999 = %s via %s, want ask via * (integer keys sort before *)", v.Action, deref(v.Pattern))
	}
	if v := p.Evaluate(Query{Surface: "bash", Values: []string{"git log"}}, nil); v.Action != Allow {
		t.Errorf("bash git log = %s, want allow", v.Action)
	}
	if n < 50000 {
		t.Fatalf("only %d keys; the test no longer covers a large file", n)
	}
}

func TestDeepNestingIsAnErrorNotACrash(t *testing.T) {
	for _, open := range []string{"[", `{"a":`} {
		text := `{"commandEffects":` + strings.Repeat(open, 200000)
		if _, err := parseConfig(text, OriginGlobal, "f"); err == nil || !strings.Contains(err.Error(), "nesting deeper") {
			t.Errorf("%q × 200000: err = %v, want a nesting error", open, err)
		}
	}
	ok := `{"commandEffects":` + strings.Repeat("[", 150) + strings.Repeat("]", 150) + `}`
	if _, err := parseConfig(ok, OriginGlobal, "f"); err != nil {
		t.Errorf("150 levels: %v", err)
	}
}

func TestFrontmatterQuirks(t *testing.T) {
	type want map[string]string // surface → "action" or "pattern=action;…"
	describe := func(perms *permissions) want {
		got := want{}
		surfaces, values := perms.all()
		for i, s := range surfaces {
			if v := values[i]; v.state {
				e, _ := v.patterns.get("*")
				got[s] = string(e.action)
			} else {
				pats, entries := v.patterns.all()
				var parts []string
				for j, p := range pats {
					parts = append(parts, p+"="+string(entries[j].action)+entries[j].reason)
				}
				got[s] = strings.Join(parts, ";")
			}
		}
		return got
	}
	cases := []struct {
		name, text string
		want       want
	}{
		{"CRLF", "---\r\npermission:\r\n  bash: allow\r\n---\r\n", want{"bash": "allow"}},
		{"leading blank line", "\n---\npermission:\n  bash: allow\n---\n", want{}},
		{"closed by the first later \\n---, even ----", "---\npermission:\n  bash: allow\n----\n  read: allow\n---\n", want{"bash": "allow"}},
		{"never closed", "---\npermission:\n  bash: allow\n", want{}},
		{"empty key after trimming is skipped", "---\npermission:\n  bash:\n    : allow\n    ls: allow\n---\n", want{"bash": "ls=allow"}},
		{"a lone quote value is empty", "---\npermission:\n  bash:\n    npm *:\n      action: deny\n      reason: \"\n---\n", want{"bash": "npm *=deny"}},
		{"quotes peeled per side", "---\npermission:\n  \"bash': deny\n  'skill: allow\n---\n", want{"bash": "deny", "skill": "allow"}},
		{"inline comment stays in the value", "---\npermission:\n  bash: allow # x\n  read: deny\n---\n", want{"read": "deny"}},
		{"comment lines skipped at any indentation", "---\npermission:\n    # x: y\n  bash: deny\n#read: allow\n---\n", want{"bash": "deny"}},
		{"a line closes maps at its indentation or deeper", "---\npermission:\n  bash:\n    ls: allow\n  read: deny\n    git *: allow\n---\n", want{"bash": "ls=allow", "read": "deny", "git *": "allow"}},
		{"permission only at the root", "---\nmeta:\n  permission:\n    bash: allow\n---\n", want{}},
		{"tabs count as indentation", "---\npermission:\n\tbash: deny\n---\n", want{"bash": "deny"}},
		{"deny map with extra keys and a reason", "---\npermission:\n  bash:\n    npm *:\n      action: deny\n      reason: Use pnpm\n      note: x\n---\n", want{"bash": "npm *=denyUse pnpm"}},
		{"deny map whose reason is a map is dropped", "---\npermission:\n  bash:\n    npm *:\n      action: deny\n      reason:\n    ls: allow\n---\n", want{"bash": "ls=allow"}},
	}
	for _, c := range cases {
		got := describe(agentPermissions(c.text, OriginAgent, "a.md"))
		if len(got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// The runtime keys' values are checked as NEW's schema checks them: a file
// pi rejects for a bad value contributes nothing here either.
func TestSchemaChecksRuntimeKeyValues(t *testing.T) {
	bad := []string{
		`{"debugLog":"yes"}`, `{"permissionReviewLog":1}`, `{"doublePressToConfirm":null}`, `{"$schema":1}`,
		`{"forwardingTimeoutMs":0}`, `{"promptMaxRows":1.5}`, `{"promptFieldMaxWidth":"400"}`, `{"reviewLogFieldMaxWidth":-3}`,
		`{"toolInputPreviewMaxLength":true}`, `{"piInfrastructureReadPaths":"~/x"}`, `{"piInfrastructureReadPaths":[""]}`,
		`{"authorizerChain":[1]}`, `{"permissionDialogKeys":{"approve":"y","yes":"y"}}`, `{"permissionDialogKeys":{"deny":1}}`,
		`{"shellTools":{"exec":{"workdirArgument":"w"}}}`, `{"shellTools":{"exec":{"commandArgument":"cmd","x":1}}}`,
		`{"shellTools":{"":{"commandArgument":"cmd"}}}`, `{"shellTools":[]}`, `{"authorizerTrust":{"link":["bash"]}}`,
	}
	for _, text := range bad {
		if _, err := parseConfig(text, OriginGlobal, "f"); err == nil {
			t.Errorf("parseConfig accepted %s", text)
		}
	}
	good := `{"$schema":"s","debugLog":false,"permissionReviewLog":true,"doublePressToConfirm":true,"forwardingTimeoutMs":600000,` +
		`"promptMaxRows":24,"promptFieldMaxWidth":4e2,"reviewLogFieldMaxWidth":1000.0,"toolInputPreviewMaxLength":1,"toolTextSummaryMaxLength":2,` +
		`"piInfrastructureReadPaths":["~/x","/opt/*"],"authorizerChain":[],"permissionDialogKeys":{"approve":"1","approveSessionBoth":"3"},` +
		`"shellTools":{"exec_command":{"commandArgument":"cmd","workdirArgument":"workdir"}},"authorizerTrust":{"l":["path","external_directory"]},` +
		`"promptNotifications":{"anything":[1]},"commandEffects":{"x":{}},"permission":{"bash":"ask"}}`
	if _, err := parseConfig(good, OriginGlobal, "f"); err != nil {
		t.Errorf("parseConfig rejected a valid file: %v", err)
	}
	// A project file pi rejects for a knob value floors the project's allows.
	f := newFixture(t)
	f.global(`{"permission":{"bash":"allow"}}`)
	f.project(`{"debugLog":"on","permission":{"read":"allow"}}`)
	if v := f.eval("", "bash", "ls"); v.Action != Ask || v.Origin != OriginFailClosed {
		t.Errorf("bash = %s/%s, want ask/fail-closed", v.Action, v.Origin)
	}
}

// Member keys sit where pi's object assignments put them, which decides
// between a member's rules and a wildcard surface's rules (decision 0025).
func TestDirectionalSugarKeyPlacement(t *testing.T) {
	cases := []struct{ permission, want string }{
		{`{"bash":"ask","path":"deny","x":"ask"}`, "bash,path_read,path_write,x"},
		{`{"path_read":"allow","path":"deny"}`, "path_read,path_write"},
		{`{"path_write":"allow","*_read":"allow","path":"deny"}`, "path_write,*_read,path_read"},
		{`{"path":"deny","*_read":"allow","path_read":{"/a":"ask"}}`, "path_read,path_write,*_read"},
	}
	for _, c := range cases {
		cfg, err := parseConfig(`{"permission":`+c.permission+`}`, OriginGlobal, "f")
		if err != nil {
			t.Fatal(err)
		}
		if keys, _ := expandDirectional(cfg.perms).all(); strings.Join(keys, ",") != c.want {
			t.Errorf("%s expands to %v, want %s", c.permission, keys, c.want)
		}
	}
	// The bare deny lands after the wildcard allow, so it decides path_read.
	f := newFixture(t)
	f.global(`{"permission":{"path_write":"allow","*_read":"allow","path":"deny"}}`)
	if v := f.eval("", "path_read", "/x"); v.Action != Deny {
		t.Errorf("path_read = %s, want deny (pi places path_read after *_read)", v.Action)
	}
}

// pi stats <name>.md and then reads it: a directory by that name exists but
// cannot be read, so it floors that agent; a dangling link does not exist.
func TestAgentFileThatIsADirectoryOrADanglingLink(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"allow"}}`)
	agents := filepath.Join(f.opts.AgentDir, "agents")
	if err := os.MkdirAll(filepath.Join(agents, "dir.md"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(agents, "missing"), filepath.Join(agents, "dangling.md")); err != nil {
		t.Fatal(err)
	}
	p := Load(f.opts)
	if probs := p.Problems(); len(probs) != 1 || !strings.HasSuffix(probs[0].File, "dir.md") || !probs[0].FailClosed {
		t.Fatalf("problems = %+v, want only dir.md, fail-closed", probs)
	}
	for agent, want := range map[string]Action{"dir": Ask, "dangling": Allow, "": Allow} {
		if v := p.Evaluate(Query{Agent: agent, Surface: "bash", Values: []string{"ls"}}, nil); v.Action != want {
			t.Errorf("agent %q: %s, want %s", agent, v.Action, want)
		}
	}
}

// pi merges the legacy pi-permissions.jsonc files into its runtime config
// (legacy global, global, legacy project, project); permtui takes only a
// false yoloMode from them, and the project one only when trusted.
func TestLegacyFilesOnlyTurnYoloOff(t *testing.T) {
	f := newFixture(t)
	f.global(`{"yoloMode":true,"permission":{"bash":"ask"}}`)
	legacyProject := filepath.Join(f.opts.ProjectDir, ".pi", "agent", "pi-permissions.jsonc")
	testkit.WriteFile(t, legacyProject, []byte(`{"yoloMode":false}`))
	p := Load(f.opts)
	if p.yolo || !strings.Contains(p.yoloFrom, legacyProject) {
		t.Errorf("yolo = %v from %q; want off from %s", p.yolo, p.yoloFrom, legacyProject)
	}
	if !slices.Contains(p.WatchPaths(), legacyProject) {
		t.Errorf("watch paths %v lack %s", p.WatchPaths(), legacyProject)
	}
	f.opts.TrustProject = false
	if !Load(f.opts).yolo {
		t.Error("an untrusted project's legacy file turned yolo off; pi withholds it")
	}
	f.opts.TrustProject = true
	testkit.WriteFile(t, legacyProject, []byte(`{"yoloMode":true}`))
	f.global(`{"permission":{"bash":"ask"}}`)
	if Load(f.opts).yolo {
		t.Error("a legacy yoloMode true turned yolo on")
	}
	// A legacy file permtui cannot read may hold a false: yolo is off.
	f.global(`{"yoloMode":true}`)
	if err := os.Remove(legacyProject); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(legacyProject, 0o700); err != nil {
		t.Fatal(err)
	}
	p = Load(f.opts)
	if p.yolo || !strings.Contains(p.yoloFrom, legacyProject) {
		t.Errorf("unreadable legacy file: yolo = %v from %q; want off", p.yolo, p.yoloFrom)
	}
	if len(p.Problems()) != 1 || p.Problems()[0].FailClosed {
		t.Errorf("problems = %+v; want one that names the legacy file without a floor", p.Problems())
	}
}

// pi reads a policy file of any size, so a global config over the old 1 MiB
// cap keeps its denies; a file beyond the memory cap is a problem (serve
// then holds every allow) whose message says so.
func TestLargePolicyFilesAreRead(t *testing.T) {
	f := newFixture(t)
	pad := "/*" + strings.Repeat("x", 1<<20) + "*/"
	f.global(`{"permission":{"bash":{` + pad + `"rm *":"deny"}}}`)
	f.project(`{"permission":{"bash":{"git *":"allow"}}}`)
	if v := f.eval("", "bash", "rm -rf /"); v.Action != Deny {
		t.Fatalf("rm under a 1 MiB global config = %s, want deny\n%s", v.Action, v.Explanation)
	}
	file := f.global("")
	if err := os.Truncate(file, maxPolicyFileSize+1); err != nil {
		t.Fatal(err)
	}
	p := Load(f.opts)
	if probs := p.Problems(); len(probs) != 1 || probs[0].File != file || !strings.Contains(probs[0].Message, "bytes") || !probs[0].Unheld {
		t.Errorf("problems = %+v; want one naming the oversized %s, unheld (decision 0177)", probs, file)
	}
}

// Each agent ruleset repeats the shared rules, so a large global config and
// a few agent files could take gigabytes: the rules compiled in all are
// bounded, and the agents that do not fit are a problem (serve then holds
// every allow) judged by the agent-less rules.
func TestComposedRulesAreBounded(t *testing.T) {
	f := newFixture(t)
	var sb strings.Builder
	sb.WriteString(`{"permission":{"bash":{"*":"allow",`)
	for i := range maxComposedRules / 2 {
		fmt.Fprintf(&sb, `"%x":"deny",`, i)
	}
	sb.WriteString(`"rm *":"deny"}}}`)
	f.global(sb.String())
	f.agent("a", "---\npermission:\n  bash:\n    git *: deny\n---\n")
	f.agent("b", "---\npermission:\n  bash:\n    git *: deny\n---\n")
	p := Load(f.opts)
	total := len(p.base.rules)
	for _, name := range p.Agents() {
		if rs := p.agents[name]; rs != p.base {
			total += len(rs.rules)
		}
	}
	if total > maxComposedRules {
		t.Errorf("%d rules compiled, over %d", total, maxComposedRules)
	}
	probs := p.Problems()
	if len(probs) != 2 || probs[0].Agent != "a" || probs[1].Agent != "b" || !probs[0].Unheld || !probs[1].Unheld {
		t.Fatalf("problems = %+v; want agents a and b unheld", probs)
	}
	if v := p.Evaluate(Query{Agent: "a", Surface: "bash", Values: []string{"rm x"}}, nil); v.Action != Deny {
		t.Errorf("the shared deny: %s", v.Action)
	}
	// Shared rules over the bound are not compiled at all: every request is
	// asked about (and the agents, which repeat them, do not fit either).
	f.project(strings.ReplaceAll(sb.String(), `":"deny"`, `x":"deny"`))
	p = Load(f.opts)
	if probs := p.Problems(); len(probs) != 3 || !probs[0].Unheld || probs[0].Agent != "" || !strings.Contains(probs[0].Message, "permtui denies every ask") {
		t.Fatalf("problems = %+v; want the configs over the bound, unheld (decision 0177)", probs)
	}
	if v := p.Evaluate(Query{Surface: "bash", Values: []string{"rm x"}}, nil); v.Action != Ask || len(p.base.rules) != 1 {
		t.Errorf("over the bound: %s with %d rules", v.Action, len(p.base.rules))
	}
}

// A verdict says when the agent it judged for has no agent file, so only
// the shared policy judged it (F4: a lookalike name escapes builder's file).
func TestAVerdictSaysWhenTheAgentHasNoFile(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"ask"}}`)
	f.agent("builder", "---\npermission:\n  bash:\n    \"npm *\": deny\n---\n")
	for agent, want := range map[string]bool{"builder": false, "build\u0435r": true, "": false} {
		if got := f.eval(agent, "bash", "npm publish").AgentWithoutFile; got != want {
			t.Errorf("agent %q: AgentWithoutFile %v, want %v", agent, got, want)
		}
	}
}

// An agent name without a file that differs from an agent file's name only
// by case or blanks at its ends ("Builder", "builder ") names that file, so
// the person sees whose rules it escapes (third adversarial pass, finding 9).
func TestAVerdictNamesTheAgentFileANameResembles(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"ask"}}`)
	f.agent("builder", "---\npermission:\n  bash:\n    \"npm *\": deny\n---\n")
	for agent, want := range map[string]string{"Builder": "builder", "BUILDER ": "builder", "builder": "", "scout": ""} {
		if got := f.eval(agent, "bash", "npm publish").AgentResembles; got != want {
			t.Errorf("agent %q: AgentResembles %q, want %q", agent, got, want)
		}
	}
}

// TestLocatedCwdsAreBounded: cwds come from untrusted requests, so what
// Locate keeps stays under maxLocated however many it sees, a cwd seen
// again takes no more room, and the cwd located last is still read as
// inside (decision 0257).
func TestLocatedCwdsAreBounded(t *testing.T) {
	project := t.TempDir()
	sub := filepath.Join(project, "s")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	p := Load(LoadOptions{AgentDir: t.TempDir(), ProjectDir: project, TrustProject: true})
	for range maxLocated * 2 {
		p.Locate(sub) // the same cwd again and again clears nothing
	}
	for i := range maxLocated - 1 {
		p.Locate(filepath.Join(project, "gone", strconv.Itoa(i)))
	}
	if out, _ := p.OutsideProject(sub); out != "" {
		t.Fatalf("a cwd located first was dropped before the bound: outside %q", out)
	}
	p.Locate(filepath.Join(project, "gone", "one more"))
	p.Locate(sub)
	n := 0
	p.located.Range(func(any, any) bool { n++; return true })
	if out, _ := p.OutsideProject(sub); n > maxLocated || out != "" {
		t.Errorf("%d cwds kept (bound %d); the last located is outside %q", n, maxLocated, out)
	}
}
