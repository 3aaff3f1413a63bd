package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/ui"
	"github.com/permtui/permtui/internal/wire"
)

// ruleEnv is an agent dir, project and state dir with a global config and
// an audit log of recorded asks.
type ruleEnv struct {
	agentDir, project, state string
}

func newRuleEnv(t *testing.T, global string) ruleEnv {
	t.Helper()
	root := t.TempDir()
	e := ruleEnv{filepath.Join(root, "agent"), filepath.Join(root, "proj"), filepath.Join(root, "state")}
	if global != "" {
		testkit.WriteFile(t, e.global(), []byte(global))
	}
	for _, dir := range []string{e.project, filepath.Join(e.agentDir, "sessions")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e ruleEnv) global() string { return resolve.GlobalConfigPath(e.agentDir) }

func (e ruleEnv) args(cmd ...string) []string {
	return append(cmd, "--agent-dir", e.agentDir, "--project", e.project, "--state-dir", e.state)
}

// record appends decisions to the audit log as serve writes them.
func (e ruleEnv) record(t *testing.T, recs ...serve.AuditRecord) {
	t.Helper()
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(e.state, "audit.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, r := range recs {
		line, _ := json.Marshal(r)
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

func asked(agent, value string, approved bool, by *wire.DecisionSource) serve.AuditRecord {
	return serve.AuditRecord{
		RequestID: "r-" + value, Agent: agent, Surface: "bash", MatchValues: []string{value}, Approved: approved, DecidedBy: by,
		Facts: &serve.AuditFacts{Principal: agent, Surface: "bash", MatchValues: []string{value}, RequesterCwd: "/w"},
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const commented = "{\n  // ours\n  \"permission\": {\n    \"bash\": {\n      \"*\": \"ask\"\n    }\n  }\n}\n"

func TestRuleAddDryRunShowsDiffAndCoverage(t *testing.T) {
	e := newRuleEnv(t, commented)
	e.record(t, asked("builder", "npm install a", true, wire.UserDecision()), asked("builder", "ls", true, wire.UserDecision()))
	code, out, errOut := runCmd(t, "", e.args("rule", "add", "--surface", "bash", "--pattern", "npm install *", "--action", "allow", "--dry-run")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`+      "npm install *": "allow"`, `-      "*": "ask"`, "would have decided 1 of the last 2 recorded asks", "dry run: nothing written"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if readFile(t, e.global()) != commented {
		t.Error("a dry run wrote the file")
	}
}

func TestRuleAddWritesRecordsAndBacksUp(t *testing.T) {
	e := newRuleEnv(t, commented)
	code, out, errOut := runCmd(t, "", e.args("rule", "add", "--surface", "bash", "--pattern", "npm install *", "--action", "allow", "--yes")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := readFile(t, e.global()); !strings.Contains(got, "// ours") || !strings.Contains(got, `"npm install *": "allow"`) {
		t.Errorf("file:\n%s", got)
	}
	if !strings.Contains(out, "backup:  "+filepath.Join(e.state, "backups")) {
		t.Errorf("output:\n%s", out)
	}
	log := readFile(t, filepath.Join(e.state, "audit.jsonl"))
	var rec serve.RuleRecord
	if err := json.Unmarshal([]byte(strings.TrimSpace(log)), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Kind != "rule" || rec.Pattern != "npm install *" || rec.File != e.global() || rec.By == "" || rec.Via != "rule add" || rec.Backup == "" {
		t.Errorf("audit: %+v", rec)
	}
	// The written rule decides through 'permtui resolve' too.
	code, out, _ = runCmd(t, "", e.args("resolve", "--surface", "bash", "--value", "npm install x")...)
	if code != 0 || !strings.Contains(out, `"state":"allow"`) {
		t.Errorf("resolve: %d %s", code, out)
	}
}

func TestRuleAddAgentScope(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"*":"ask"}}`)
	agentFile := filepath.Join(e.agentDir, "agents", "builder.md")
	testkit.WriteFile(t, agentFile, []byte("---\nname: builder\n---\nBuild.\n"))
	code, _, errOut := runCmd(t, "", e.args("rule", "add", "--scope", "agent", "--agent", "builder", "--surface", "bash", "--pattern", "make *", "--action", "allow", "--yes")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := readFile(t, agentFile); got != "---\nname: builder\npermission:\n  bash:\n    \"make *\": allow\n---\nBuild.\n" {
		t.Errorf("agent file:\n%s", got)
	}
}

func TestRuleAddRefusesWhatPiOrderingDecidesOtherwise(t *testing.T) {
	global := `{"permission":{"skill":{"*":"deny"}}}`
	e := newRuleEnv(t, global)
	code, _, errOut := runCmd(t, "", e.args("rule", "add", "--surface", "skill", "--pattern", "7", "--action", "allow", "--yes")...)
	if code != 1 || !strings.Contains(errOut, "nothing written") || !strings.Contains(errOut, "integer-like") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if readFile(t, e.global()) != global {
		t.Error("file changed")
	}
}

func TestRuleAddConfirmation(t *testing.T) {
	e := newRuleEnv(t, commented)
	add := e.args("rule", "add", "--surface", "bash", "--pattern", "ls", "--action", "allow")
	if code, _, errOut := runCmd(t, "", add...); code != 1 || !strings.Contains(errOut, "no terminal") {
		t.Errorf("without a terminal: %d %s", code, errOut)
	}
}

// TestRuleAddBroadNeedsTheCount: allowing what a person denied needs a
// second confirmation naming how many, added to the asks a "*" would have
// decided (3 + 2): neither warning's count alone passes.
func TestRuleAddBroadNeedsTheCount(t *testing.T) {
	e := newRuleEnv(t, commented)
	e.record(t, asked("a", "rm -rf /tmp/x", false, wire.UserDecision()), asked("a", "rm x", false, wire.UserDecision()), asked("a", "ls", true, wire.UserDecision()))
	add := e.args("rule", "add", "--surface", "bash", "--pattern", "*", "--action", "allow", "--yes")
	code, out, errOut := runCmd(t, "", add...)
	if code != 1 || !strings.Contains(out, "would allow 2 recorded asks a person denied") || !strings.Contains(errOut, "--confirm-broad 5") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	for _, n := range []string{"2", "3"} {
		if code, _, errOut := runCmd(t, "", append(add, "--confirm-broad", n)...); code != 1 {
			t.Errorf("--confirm-broad %s accepted: %s", n, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "", append(add, "--confirm-broad", "5")...); code != 0 {
		t.Errorf("confirmed: %s", errOut)
	}
}

// TestRuleAddBroadWithCountZeroSaysWhatZeroConfirms: a "*" rule on an
// empty audit log still needs --confirm-broad 0, and the refusal says what
// the 0 is rather than calling it a sum of counts.
func TestRuleAddBroadWithCountZeroSaysWhatZeroConfirms(t *testing.T) {
	e := newRuleEnv(t, commented)
	add := e.args("rule", "add", "--surface", "bash", "--pattern", "*", "--action", "allow", "--yes")
	code, out, errOut := runCmd(t, "", add...)
	if code != 1 || !strings.Contains(errOut, "--confirm-broad 0 (it would have decided no recorded ask") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "", append(add, "--confirm-broad", "0")...); code != 0 {
		t.Errorf("confirmed: %s", errOut)
	}
}

func TestSimulateGuardsPersonDenials(t *testing.T) {
	e := newRuleEnv(t, commented)
	e.record(t,
		asked("builder", "npm install a", true, wire.UserDecision()),
		asked("builder", "npm install evil", false, wire.UserDecision()),
		asked("reviewer", "git status", true, wire.UserDecision()),
	)
	code, out, errOut := runCmd(t, "", e.args("simulate", "--rule", "bash", "git *", "allow")...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	for _, want := range []string{"replayed 3 recorded asks", "current         0      0      3", "candidate       1      0      2", `agent "reviewer"`, `ask → allow  "bash" ["git status"]  (a person approved it)`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd(t, "", e.args("simulate", "--rule", "bash", "npm *", "allow", "--rule", "bash", "npm install evil", "deny", "--json")...)
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	if code != 0 || rep.DeniedNowAllowed != 0 || len(rep.Changed) != 2 {
		t.Errorf("exit %d: %+v", code, rep)
	} else if rep.Changed[0].Person != "approved" || rep.Changed[1].Person != "denied" {
		t.Errorf("persons %q, %q: want approved, denied", rep.Changed[0].Person, rep.Changed[1].Person)
	}
	cfg := filepath.Join(t.TempDir(), "candidate.json")
	testkit.WriteFile(t, cfg, []byte(`{"permission":{"bash":"allow"}}`))
	code, out, _ = runCmd(t, "", e.args("simulate", "--config", cfg)...)
	if code != 1 || !strings.Contains(out, "1 asks a person denied would now be allowed") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "", append(e.args("simulate"), "--rule", "bash")...); code != 2 {
		t.Errorf("short --rule: exit %d", code)
	}
}

// The audit log's facts came from children: simulate --json must not carry a
// C1 control or bidi override to the terminal as it is.
func TestSimulateJSONEscapesTerminalControls(t *testing.T) {
	const agent = "b\u009b2J\u202ex"
	e := newRuleEnv(t, commented)
	e.record(t, asked(agent, "git status", true, wire.UserDecision()))
	_, out, _ := runCmd(t, "", e.args("simulate", "--rule", "bash", "git *", "allow", "--json")...)
	if strings.ContainsAny(out, "\u009b\u202e") {
		t.Fatalf("raw control in %q", out)
	}
	if !strings.Contains(out, `\u009b2J\u202ex`) {
		t.Fatalf("agent not kept, escaped: %s", out)
	}
}

// TestConsoleRulesWriteAsRuleAddDoes: the console's R backend previews and
// writes through the same plan, with the audit line saying "console".
func TestConsoleRulesWriteAsRuleAddDoes(t *testing.T) {
	e := newRuleEnv(t, commented)
	testkit.WriteFile(t, filepath.Join(e.agentDir, "agents", "builder.md"), []byte("---\nname: builder\n---\n"))
	e.record(t, asked("builder", "npm install a", false, wire.UserDecision()))
	c := consoleRules{ruleService{opts: resolve.LoadOptions{AgentDir: e.agentDir, ProjectDir: e.project, TrustProject: true}, stateDir: e.state}}
	facts := resolve.Query{Agent: "builder", Surface: "bash", Values: []string{"npm install b"}}
	d := ui.RuleDraft{Scope: "agent", Agent: "builder", Surface: "bash", Pattern: "npm install *", Action: resolve.Allow,
		Facts: facts, Waiting: []resolve.Query{facts, {Agent: "other", Surface: "bash", Values: []string{"npm install b"}}}}
	p := c.PreviewRule(d)
	if p.Refused != "" || !slices.Equal(p.Waiting, []int{0}) || p.Confirm != 1 || !strings.Contains(p.Diff, `+    "npm install *": allow`) ||
		!strings.Contains(p.Coverage, "1 of them a person denied") {
		t.Fatalf("preview %+v", p)
	}
	if _, err := c.WriteRule(d, 0, p.Digest); err == nil {
		t.Fatal("a broad rule was written without its count")
	}
	if _, err := c.WriteRule(d, 1, p.Digest); err != nil {
		t.Fatal(err)
	}
	if log := readFile(t, filepath.Join(e.state, "audit.jsonl")); !strings.Contains(log, `"via":"console"`) {
		t.Errorf("audit:\n%s", log)
	}
	if p := c.PreviewRule(ui.RuleDraft{Scope: "agent", Agent: "nobody", Surface: "bash", Pattern: "x", Action: resolve.Allow, Facts: facts}); p.Refused == "" {
		t.Error("an agent without a file was not refused")
	}
}

// TestRuleAddDiffShowsNoTerminalControls: a project config comes with the
// repository, so a comment in it may hold escape sequences or a bidi
// override; the diff's context lines print them as stand-ins.
func TestRuleAddDiffShowsNoTerminalControls(t *testing.T) {
	e := newRuleEnv(t, "")
	hostile := "{\n  // \x1b]0;pwned\x07\x1b[2J \u202eevil\n  \"permission\": {\"bash\": {\"*\": \"ask\"}}\n}\n"
	testkit.WriteFile(t, resolve.ProjectConfigPaths(e.project)[0], []byte(hostile))
	code, out, errOut := runCmd(t, "", e.args("rule", "add", "--scope", "project", "--surface", "bash", "--pattern", "ls", "--action", "allow", "--dry-run")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("output holds terminal controls: %q", out)
	}
	if !strings.Contains(out, `+  "permission": {"bash": {"*": "ask", "ls": "allow"}}`) {
		t.Errorf("output lacks the change:\n%s", out)
	}
}

// TestConsoleRulesStarOnAnEmptyLogIsBroad: the count is 0, and the
// preview still says that a second confirmation is needed.
func TestConsoleRulesStarOnAnEmptyLogIsBroad(t *testing.T) {
	e := newRuleEnv(t, commented)
	c := consoleRules{ruleService{opts: resolve.LoadOptions{AgentDir: e.agentDir, ProjectDir: e.project, TrustProject: true}, stateDir: e.state}}
	facts := resolve.Query{Surface: "bash", Values: []string{"rm -rf /"}}
	p := c.PreviewRule(ui.RuleDraft{Scope: "global", Surface: "bash", Pattern: "*", Action: resolve.Allow, Facts: facts})
	if p.Refused != "" || !p.Broad || p.Confirm != 0 {
		t.Fatalf("preview %+v", p)
	}
}

// TestRuleAddNamesALoosenedDeny (issue 18, case 1): pi expands ~ in a deny's
// pattern, so an allow of the home directory passes ~/.ssh/*; rule add names
// it and --yes alone writes nothing.
func TestRuleAddNamesALoosenedDeny(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	e := newRuleEnv(t, `{"permission":{"read":{"*":"ask","~/.ssh/*":"deny"}}}`)
	add := e.args("rule", "add", "--surface", "read", "--pattern", "/home/u/*", "--action", "allow", "--value", "/home/u/notes.txt", "--yes")
	code, out, errOut := runCmd(t, "", add...)
	if code != 1 || !strings.Contains(out, `warning: it loosens "read" "/home/u/.ssh/x": deny → allow for the main agent and any agent without its own file`) || !strings.Contains(errOut, "--confirm-broad 1") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(readFile(t, e.global()), "/home/u/*") {
		t.Fatal("written with --yes alone")
	}
	if code, _, errOut := runCmd(t, "", append(add, "--confirm-broad", "1")...); code != 0 {
		t.Fatalf("confirmed: %s", errOut)
	}
}

// TestSimulateReportsPolicyLoosening (issue 18): a --rule that turns a
// written deny into allow is a finding (exit 1) even when no recorded ask
// shows it; an error is not (exit 2).
func TestSimulateReportsPolicyLoosening(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"bash":{"*":"ask","rm -rf /":"deny"}}}`)
	code, out, errOut := runCmd(t, "", e.args("simulate", "--rule", "bash", "rm *", "allow")...)
	if code != 1 || !strings.Contains(out, `the policy loosens 1 verdicts`) || !strings.Contains(out, `"bash" "rm -rf /": deny → allow for the main agent and any agent without its own file`) {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCmd(t, "", e.args("simulate", "--rule", "bash", "rm *", "allow", "--json")...)
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	if code != 1 || len(rep.Loosened) != 1 || rep.Loosened[0].Was == nil || rep.Loosened[0].Was.Pattern != "rm -rf /" || rep.Loosened[0].After != resolve.Allow {
		t.Fatalf("exit %d: %+v", code, rep.Loosened)
	}
	if code, out, _ := runCmd(t, "", e.args("simulate", "--rule", "bash", "ls", "allow")...); code != 0 || !strings.Contains(out, "loosens nothing") {
		t.Errorf("a named ask → allow: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCmd(t, "", e.args("simulate", "--rule", "bash", "ls", "allow", "--audit", e.project)...); code != 2 || !strings.Contains(errOut, "permtui:") {
		t.Errorf("an unreadable log: exit %d %s", code, errOut)
	}
	if code, _, _ := runCmd(t, "", e.args("simulate", "--rule", "bash", "ls", "maybe")...); code != 2 {
		t.Errorf("a bad action: exit %d", code)
	}
}

// TestConcurrentRuleAddsLoseNoRule (issue 18, case 8): writers at once each
// read, plan, write and verify under the policy directory's lock, so every
// rule that printed written: is in the file and in the audit log.
func TestConcurrentRuleAddsLoseNoRule(t *testing.T) {
	e := newRuleEnv(t, commented)
	const writers = 8
	type result struct {
		code     int
		out, err string
	}
	results := make(chan result, writers)
	for i := range writers {
		go func() {
			code, out, errOut := runCmd(t, "", e.args("rule", "add", "--surface", "bash", "--pattern", fmt.Sprintf("tool%d *", i), "--action", "allow", "--yes")...)
			results <- result{code, out, errOut}
		}()
	}
	written := 0
	for range writers {
		r := <-results
		if r.code != 0 {
			t.Errorf("exit %d: %s", r.code, r.err)
		}
		if strings.Contains(r.out, "written: ") {
			written++
		}
	}
	text := readFile(t, e.global())
	for i := range writers {
		if !strings.Contains(text, fmt.Sprintf(`"tool%d *": "allow"`, i)) {
			t.Errorf("rule tool%d lost:\n%s", i, text)
		}
	}
	if got := strings.Count(readFile(t, filepath.Join(e.state, "audit.jsonl")), `"kind":"rule"`); got != written || written != writers {
		t.Errorf("%d rule records, %d written: lines, want %d", got, written, writers)
	}
}

// TestRuleAddRefusesUpFrontWhenTheAuditLogIsRefused (issue 22): a log
// that would refuse the rule's record (a link, a file others read: decision
// 0281) is found before the rule is written, so nothing is written, by
// 'rule add' or by the console's rule dialog.
func TestRuleAddRefusesUpFrontWhenTheAuditLogIsRefused(t *testing.T) {
	for what, plant := range map[string]func(path string) error{
		"(symlink)": func(path string) error { return os.Symlink(path+".elsewhere", path) },
		"mode 0644": func(path string) error { return os.WriteFile(path, nil, 0o644) },
	} {
		e := newRuleEnv(t, commented)
		if err := os.MkdirAll(e.state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := plant(filepath.Join(e.state, "audit.jsonl")); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCmd(t, "", e.args("rule", "add", "--surface", "bash", "--pattern", "ls", "--action", "allow", "--yes")...)
		if code != 1 || strings.Contains(out, "written:") || !strings.Contains(errOut, "nothing written") || !strings.Contains(errOut, what) {
			t.Fatalf("%s: exit %d:\n%s\n%s", what, code, out, errOut)
		}
		// The console's rule dialog writes through the same service.
		c := consoleRules{ruleService{opts: resolve.LoadOptions{AgentDir: e.agentDir, ProjectDir: e.project, TrustProject: true}, stateDir: e.state}}
		d := ui.RuleDraft{Scope: "global", Surface: "bash", Pattern: "ls", Action: resolve.Allow, Facts: resolve.Query{Surface: "bash", Values: []string{"ls"}}}
		p := c.PreviewRule(d)
		if _, err := c.WriteRule(d, p.Confirm, p.Digest); err == nil || !strings.Contains(err.Error(), "nothing written") || !strings.Contains(err.Error(), what) {
			t.Fatalf("%s: console WriteRule: %v (preview %+v)", what, err, p)
		}
		if got := readFile(t, e.global()); got != commented {
			t.Fatalf("%s: the rule was written:\n%s", what, got)
		}
	}
}

// TestCoverageCountsOnlyTheNewRulesSurface (issue 18): asks on bash decided
// by bash "*" → ask are not decided by a new task "*" → ask in the same file.
func TestCoverageCountsOnlyTheNewRulesSurface(t *testing.T) {
	e := newRuleEnv(t, commented)
	e.record(t, asked("a", "ls", true, wire.UserDecision()), asked("a", "rm x", false, wire.UserDecision()))
	code, out, errOut := runCmd(t, "", e.args("rule", "add", "--surface", "task", "--pattern", "*", "--action", "ask", "--dry-run")...)
	if code != 0 || !strings.Contains(out, "coverage: would have decided 0 of the last 2 recorded asks") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
}

// TestRuleAddAndSimulateRefuseAMissingAgentDir (issue 18): as serve does,
// naming where they looked; nothing is created there.
func TestRuleAddAndSimulateRefuseAMissingAgentDir(t *testing.T) {
	e := newRuleEnv(t, commented)
	e.agentDir += "-typo"
	code, _, errOut := runCmd(t, "", e.args("rule", "add", "--surface", "bash", "--pattern", "ls", "--action", "allow", "--yes")...)
	if code != 1 || !strings.Contains(errOut, strconv.Quote(e.agentDir)+" does not exist") {
		t.Errorf("rule add: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(e.agentDir); err == nil {
		t.Errorf("rule add created %s", e.agentDir)
	}
	code, _, errOut = runCmd(t, "", e.args("simulate", "--rule", "bash", "ls", "allow")...)
	if code != 2 || !strings.Contains(errOut, strconv.Quote(e.agentDir)+" does not exist") {
		t.Errorf("simulate: exit %d %s", code, errOut)
	}
}

// TestRuleAddAndSimulateHelpListOnlyTheirFlags: neither serves a session, so
// neither offers --session (issue 19's smaller findings).
func TestRuleAddAndSimulateHelpListOnlyTheirFlags(t *testing.T) {
	for _, args := range [][]string{{"rule", "add", "--help"}, {"simulate", "--help"}} {
		code, out, _ := runCmd(t, "", args...)
		if code != 0 || !strings.Contains(out, "-agent-dir") || strings.Contains(out, "-session") {
			t.Errorf("%v: exit %d, help:\n%s", args, code, out)
		}
	}
	if _, out, _ := runCmd(t, "", "resolve", "--help"); !strings.Contains(out, "-session") {
		t.Error("resolve judges with a session's grants and must still offer --session")
	}
}

// TestConsoleRulesReplanBeforeWriting: the same in R: the preview named no
// loosening, an agent file written since adds one, and WriteRule refuses
// though the count (0, none asked) is unchanged in kind.
func TestConsoleRulesReplanBeforeWriting(t *testing.T) {
	e := newRuleEnv(t, commented)
	c := consoleRules{ruleService{opts: resolve.LoadOptions{AgentDir: e.agentDir, ProjectDir: e.project, TrustProject: true}, stateDir: e.state}}
	facts := resolve.Query{Surface: "bash", Values: []string{"npm test"}}
	d := ui.RuleDraft{Scope: "global", Surface: "bash", Pattern: "npm *", Action: resolve.Allow, Facts: facts}
	p := c.PreviewRule(d)
	if p.Refused != "" || p.Broad {
		t.Fatalf("preview %+v", p)
	}
	testkit.WriteFile(t, filepath.Join(e.agentDir, "agents", "locked.md"), []byte("---\nname: locked\npermission:\n  bash:\n    \"*\": deny\n---\n"))
	if _, err := c.WriteRule(d, p.Confirm, p.Digest); err == nil || !strings.Contains(err.Error(), "the policy changed while you were deciding") {
		t.Fatalf("WriteRule err = %v", err)
	}
	if readFile(t, e.global()) != commented {
		t.Error("written")
	}
}

// TestRuleAddAndSimulateRefuseAWrongAgentDir: an agent dir that exists but
// is not pi's — the project's .pi (where "global scope" would write the
// project's config) or ~/.pi without /agent — is refused, naming what was
// looked for; nothing is written.
func TestRuleAddAndSimulateRefuseAWrongAgentDir(t *testing.T) {
	e := newRuleEnv(t, commented)
	projectPi := filepath.Join(e.project, ".pi")
	testkit.WriteFile(t, resolve.ProjectConfigPaths(e.project)[0], []byte(`{"permission":{"bash":{"*":"ask"}}}`))
	bare := filepath.Join(t.TempDir(), ".pi")
	if err := os.MkdirAll(filepath.Join(bare, "agent"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{projectPi, "is the project's config"},
		{filepath.Join(projectPi, "sub"), "is the project's config"},
		{bare, "holds none of pi's agent-dir entries"},
	} {
		_ = os.MkdirAll(c.dir, 0o700)
		w := e
		w.agentDir = c.dir
		code, _, errOut := runCmd(t, "", w.args("rule", "add", "--surface", "bash", "--pattern", "ls", "--action", "allow", "--yes")...)
		if code != 1 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, strconv.Quote(c.dir)) {
			t.Errorf("rule add --agent-dir %s: exit %d %s", c.dir, code, errOut)
		}
		code, _, errOut = runCmd(t, "", w.args("simulate", "--rule", "bash", "ls", "allow")...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("simulate --agent-dir %s: exit %d %s", c.dir, code, errOut)
		}
	}
	if got := readFile(t, resolve.ProjectConfigPaths(e.project)[0]); got != `{"permission":{"bash":{"*":"ask"}}}` {
		t.Errorf("the project config was written: %s", got)
	}
}

// An allow written to the project's files says that serve holds it for a
// person until it trusts the project (decision 0206); with --trust-project,
// or for a deny, nothing is said.
func TestRuleAddSaysAProjectAllowIsHeld(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"*":"ask"}}`)
	for _, c := range []struct {
		action string
		extra  []string
		held   bool
	}{
		{"allow", nil, true},
		{"allow", []string{"--trust-project"}, false},
		{"deny", nil, false},
	} {
		args := append([]string{"rule", "add", "--scope", "project", "--surface", "bash", "--pattern", "make *", "--action", c.action, "--dry-run"}, c.extra...)
		code, out, errOut := runCmd(t, "", e.args(args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if held := strings.Contains(out, "until it runs with --trust-project"); held != c.held {
			t.Errorf("%s %v: says held %v, want %v:\n%s", c.action, c.extra, held, c.held, out)
		}
	}
}

// TestSimulateGroupsChangesByAgent: the changed asks are listed under one
// header per agent, agents in order, each agent's asks in the log's order.
func TestSimulateGroupsChangesByAgent(t *testing.T) {
	e := newRuleEnv(t, commented)
	e.record(t, asked("b", "git log", true, nil), asked("a", "git diff", true, nil), asked("b", "git add", true, nil), asked("", "git init", true, nil))
	_, out, _ := runCmd(t, "", e.args("simulate", "--rule", "bash", "git *", "allow")...)
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  agent ") || strings.HasPrefix(line, "    ask → allow") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	want := []string{`agent ""`, `ask → allow  "bash" ["git init"]`, `agent "a"`, `ask → allow  "bash" ["git diff"]`,
		`agent "b"`, `ask → allow  "bash" ["git log"]`, `ask → allow  "bash" ["git add"]`}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q\n%s", got, want, out)
	}
	_, out, _ = runCmd(t, "", e.args("simulate", "--rule", "bash", "git *", "allow", "--json")...)
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	var ids []string
	for _, c := range rep.Changed {
		ids = append(ids, c.RequestID)
	}
	if want := []string{"r-git init", "r-git diff", "r-git log", "r-git add"}; !slices.Equal(ids, want) {
		t.Fatalf("--json order %q, want %q", ids, want)
	}
}
