package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// The console wiring tests run the shipped command — the test binary becomes
// permtui (TestMain) — in a pseudo-terminal, type the documented keys and
// check what each one does on disk: the child's response, the grants and
// session-deny files, the policy file, the audit log. Nothing here builds a
// model by hand, so a key whose backend is not wired in fails.

const wiringRoot = "0198c3a4-5b6d-7e8f-9a0b-00000000a11e"

const wiringPolicy = `{
  "permission": {
    "*": "ask",
    "bash": { "*": "ask", "git status": "allow" }
  }
}
`

// console is one permtui process on a pty, and the files it serves.
type console struct {
	t        *testing.T
	home     string // HOME and TMPDIR of the process
	agentDir string
	project  string
	state    string
	layout   wire.Layout
	pty      *os.File
	cmd      *exec.Cmd
	exited   chan struct{}

	mu     sync.Mutex
	output bytes.Buffer // everything the console drew, escapes included
}

// startConsole runs 'permtui serve' as a user would in a 100×30 terminal,
// over a fresh agent dir, project and state dir.
func startConsole(t *testing.T) *console {
	t.Helper()
	c := newConsole(t)
	c.start("serve", "--agent-dir", c.agentDir, "--project", c.project, "--state-dir", c.state, "--session", wiringRoot)
	return c
}

// newConsole lays out the files a console serves; start runs it.
func newConsole(t *testing.T) *console {
	t.Helper()
	root := t.TempDir()
	c := &console{t: t, home: root, agentDir: filepath.Join(root, "agent"), project: filepath.Join(root, "proj"),
		state: filepath.Join(root, "state"), exited: make(chan struct{})}
	c.layout = wire.NewLayout(c.agentDir)
	testkit.WriteFile(t, c.policyFile(), []byte(wiringPolicy))
	if err := os.MkdirAll(c.project, 0o700); err != nil {
		t.Fatal(err)
	}
	return c
}

// start runs permtui with args (and the settle time and mouse off) on a pty,
// with HOME and TMPDIR inside the test's directory.
func (c *console) start(args ...string) {
	t := c.t
	t.Helper()
	master, slave := openPTY(t, 30, 100)
	c.cmd = exec.Command(os.Args[0], append(args, "--settle", "0", "--mouse=false", "--bell=false")...)
	c.cmd.Env = append(os.Environ(), "PERMTUI_TEST_MAIN=1", "TERM=xterm-256color", "NO_COLOR=1", "HOME="+c.home, "TMPDIR="+c.home)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = slave, slave, slave
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	c.pty = master
	go c.read()
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		master.Close()
		if t.Failed() {
			t.Logf("screen output (escapes stripped):\n%s", c.screen())
		}
	})
	c.waitFor("permtui")
}

func (c *console) policyFile() string {
	return filepath.Join(c.agentDir, "extensions", "pi-permission-system", "config.json")
}

func (c *console) read() {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.pty.Read(buf)
		c.mu.Lock()
		c.output.Write(buf[:n])
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (c *console) raw() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.output.String()
}

func (c *console) screen() string { return ansi.Strip(c.raw()) }

// mark is where the output ends now, for waitForAfter.
func (c *console) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.output.Len()
}

func (c *console) waitFor(text string) { c.t.Helper(); c.waitForAfter(0, text) }

// waitForAfter waits until text is drawn after the mark; the console redraws
// only what changed, so a mark keeps an earlier drawing from counting.
func (c *console) waitForAfter(mark int, text string) {
	c.t.Helper()
	c.waitForAnyAfter(mark, text)
}

// waitForAnyAfter waits until one of texts is drawn after the mark and
// returns it.
func (c *console) waitForAnyAfter(mark int, texts ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		raw := c.raw()
		drawn := ansi.Strip(raw[min(mark, len(raw)):])
		for _, text := range texts {
			if strings.Contains(drawn, text) {
				return text
			}
		}
		select {
		case <-c.exited:
			c.t.Fatalf("permtui exited before drawing %q", texts)
		case <-time.After(10 * time.Millisecond):
		}
	}
	c.t.Fatalf("the console never drew %q", texts)
	return ""
}

// confirmRule presses enter in the rule dialog once the preview of the
// draft as it is was drawn — ready, a text only that preview shows, drawn
// after mark (taken before the key that last changed the draft) — and waits
// for want. Enter writes nothing until the preview is shown, and an enter
// that finds it not ready may draw nothing new: "the preview is not ready
// yet" may be the status line already, and the console redraws only what
// changed. So each enter waits for the preview, not for the last status.
func (c *console) confirmRule(mark int, ready, want string) {
	c.t.Helper()
	for {
		c.waitForAfter(mark, ready)
		mark = c.mark()
		c.press("\r")
		if c.waitForAnyAfter(mark, want, "the preview is not ready yet") == want {
			return
		}
	}
}

// press types keys: each string is sent as it is ("\r" is enter, "\x1b" esc),
// one at a time, so no two are read as one paste.
func (c *console) press(keys ...string) {
	c.t.Helper()
	for _, k := range keys {
		if _, err := c.pty.Write([]byte(k)); err != nil {
			c.t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond) // a person's pace; the console reads runs of keys as one paste
	}
}

// send forwards req as the newest pi child does; the child's result arrives
// on the channel.
func (c *console) send(req *wire.Request) <-chan pichild.Result {
	results := make(chan pichild.Result, 1)
	child := pichild.Child{Layout: c.layout, Target: wiringRoot, Poll: 20 * time.Millisecond, Timeout: time.Minute}
	go func() {
		res, err := child.Ask(context.Background(), req)
		if err != nil {
			res.Outcome = pichild.Outcome("error: " + err.Error())
		}
		results <- res
	}()
	return results
}

// ask forwards a bash ask from agent and waits until the console shows it.
func (c *console) ask(agent, command string) <-chan pichild.Result {
	c.t.Helper()
	mark := c.mark()
	results := c.send(pichild.NewestBash(wiringRoot, agent, "0198c3a4-0000-7000-8000-0000000000c1", c.project, command))
	c.waitForAfter(mark, command)
	return results
}

// answer waits for the child's result.
func (c *console) answer(results <-chan pichild.Result) pichild.Result {
	c.t.Helper()
	select {
	case r := <-results:
		if r.Outcome != pichild.Answered {
			c.t.Fatalf("the child got no answer: %s", r.Outcome)
		}
		return r
	case <-time.After(30 * time.Second):
		c.t.Fatal("the child was never answered")
	}
	return pichild.Result{}
}

func (c *console) wantApproved(results <-chan pichild.Result, state wire.State) pichild.Result {
	c.t.Helper()
	r := c.answer(results)
	if !r.Response.Approved || r.Response.State != state {
		c.t.Fatalf("child got approved=%v state=%s, want an approval %s", r.Response.Approved, r.Response.State, state)
	}
	return r
}

func (c *console) wantDenied(results <-chan pichild.Result, reason string) {
	c.t.Helper()
	r := c.answer(results)
	if r.Response.Approved || !strings.Contains(r.Response.DenialReason, reason) {
		c.t.Fatalf("child got approved=%v reason %q, want a denial naming %q", r.Response.Approved, r.Response.DenialReason, reason)
	}
}

// audit is the audit log's text.
func (c *console) audit() string {
	data, err := os.ReadFile(filepath.Join(c.state, "audit.jsonl"))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(data)
}

func (c *console) store() *grants.Store {
	c.t.Helper()
	s, err := grants.Open(filepath.Join(c.state, "grants"))
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// wantLeft: the ask was not answered, and its request waits on disk for the
// next server.
func (c *console) wantLeft(results <-chan pichild.Result) {
	c.t.Helper()
	select {
	case r := <-results:
		c.t.Fatalf("a left ask was answered: %+v", r)
	default:
	}
	entries, err := os.ReadDir(c.layout.RequestsDir(wiringRoot))
	if err != nil || len(entries) != 1 {
		c.t.Fatalf("the left request is not waiting on disk: %v %v", entries, err)
	}
}

func (c *console) waitExit() {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(20 * time.Second):
		c.t.Fatal("permtui did not exit")
	}
}

func TestConsoleWiringApproveAndDeny(t *testing.T) {
	c := startConsole(t)

	got := c.ask("builder", "make lint")
	c.press("y")
	c.wantApproved(got, wire.StateApproved)

	got = c.ask("builder", "make clean")
	c.press("n")
	c.wantDenied(got, "")

	got = c.ask("builder", "make deploy")
	c.press("r", "n", "o", "t", " ", "t", "o", "d", "a", "y", "\r")
	c.wantDenied(got, "not today")

	if a := c.audit(); !strings.Contains(a, "not today") || strings.Count(a, `"make `) < 3 {
		t.Errorf("the audit log lacks the person's decisions:\n%s", a)
	}
}

func TestConsoleWiringIdenticalAsks(t *testing.T) {
	c := startConsole(t)
	first := c.ask("builder", "make test")
	second := c.ask("builder", "make test")
	c.press("a", "a")
	c.wantApproved(first, wire.StateApproved)
	c.wantApproved(second, wire.StateApproved)
}

func TestConsoleWiringSessionGrantNarrowAndRevoke(t *testing.T) {
	c := startConsole(t)
	got := c.ask("builder", "npm test --watch")
	// s, the whole session (second option), e narrows the pattern, enter confirms.
	mark := c.mark()
	c.press("s")
	c.waitForAfter(mark, "whole session")
	c.press("j", "e", "\x15") // ctrl+u clears the prefilled pattern
	c.press(strings.Split("npm test --w*", "")...)
	c.press("\r", "\r")
	// A whole-session grant is permtui's to keep: the child is told approved.
	c.wantApproved(got, wire.StateApproved)
	wantGrant := wire.Grant{Surface: "bash", Pattern: "npm test --w*"}
	if g := c.store().For(wiringRoot); len(g) != 1 || g[0] != wantGrant {
		t.Fatalf("grants %+v, want the narrowed %+v", g, wantGrant)
	}
	// The grant answers the next covered ask by itself.
	c.wantApproved(c.send(pichild.NewestBash(wiringRoot, "scout", "0198c3a4-0000-7000-8000-0000000000c2", c.project, "npm test --watchAll")), wire.StateApproved)
	// p lists it, d revokes it.
	mark = c.mark()
	c.press("p")
	c.waitForAfter(mark, "npm test --w*")
	c.press("d")
	deadline := time.Now().Add(10 * time.Second)
	for len(c.store().For(wiringRoot)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("d in p did not revoke the grant: %+v", c.store().For(wiringRoot))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConsoleWiringDenyForTheSession(t *testing.T) {
	c := startConsole(t)
	got := c.ask("builder", "curl evil.example")
	mark := c.mark()
	c.press("N")
	c.waitForAfter(mark, "reason")
	c.press(strings.Split("no network", "")...)
	c.press("\r")
	c.wantDenied(got, "no network")
	denies, err := c.store().Denies(wiringRoot)
	if err != nil || len(denies) != 1 {
		t.Fatalf("session denies %+v %v", denies, err)
	}
	// The deny answers the same ask from another subagent by itself.
	c.wantDenied(c.send(pichild.NewestBash(wiringRoot, "scout", "0198c3a4-0000-7000-8000-0000000000c3", c.project, "curl evil.example")), "no network")
}

// TestConsoleWiringRuleFromAnAsk: R writes the rule into pi's config.json,
// and the reloaded policy answers the waiting asks it covers.
func TestConsoleWiringRuleFromAnAsk(t *testing.T) {
	c := startConsole(t)
	first := c.ask("builder", "pnpm install left-pad")
	second := c.ask("scout", "pnpm install right-pad")
	// An allow rule waits until every ask it decides was on screen
	// (decision 0159): look at the second, then back to the first.
	mark := c.mark()
	c.press("j")
	c.waitForAfter(mark, "ask 2 of 2")
	mark = c.mark()
	c.press("k")
	c.waitForAfter(mark, "ask 1 of 2")
	mark = c.mark()
	c.press("R")
	c.waitForAfter(mark, "pattern")
	c.press("\x15")
	c.press(strings.Split("pnpm install *", "")...)
	mark = c.mark()
	c.press("\t") // this agent → all agents (global)
	// Only the global draft's preview decides both asks.
	c.confirmRule(mark, "2 waiting asks it would decide now", "rule written")
	c.wantApproved(first, wire.StateApproved)
	c.wantApproved(second, wire.StateApproved)
	policy, err := os.ReadFile(c.policyFile())
	if err != nil || !strings.Contains(string(policy), `"pnpm install *": "allow"`) {
		t.Fatalf("config.json:\n%s (%v)", policy, err)
	}
	if !strings.Contains(c.audit(), "pnpm install *") {
		t.Errorf("the audit log does not record the rule:\n%s", c.audit())
	}
}

// TestDemoConsoleWritesRules: the demo's console writes a rule from R into the
// demo's own policy (the researcher's agent file), and the reload answers the
// ask; over the demo's hub, R says where rules are written instead.
func TestDemoConsoleWritesRules(t *testing.T) {
	c := newConsole(t)
	c.start("demo")
	// The script's first seconds queue six asks for a person, plan.md the
	// first; each arrival redoes an open dialog's preview, so R waits for
	// them all.
	c.waitFor("6 pending")
	mark := c.mark()
	c.press("R")
	c.waitForAfter(mark, "this agent (researcher)")
	// The rule passes the global *.env deny inside notes/ (the authority
	// diff names it): writing it takes the count the warning gives.
	c.confirmRule(mark, "it would decide now", "this rule is broad: type 1 and enter")
	mark = c.mark()
	c.press("1", "\r")
	c.waitForAfter(mark, "rule written to")
	agents, err := filepath.Glob(filepath.Join(c.home, "permtui-demo-*", "agent", "agents", "researcher.md"))
	if err != nil || len(agents) != 1 {
		t.Fatalf("the demo's researcher agent file: %v %v", agents, err)
	}
	text, err := os.ReadFile(agents[0])
	if err != nil || !strings.Contains(string(text), "notes/*") {
		t.Fatalf("the rule is not in %s:\n%s", agents[0], text)
	}
	c.press("\x03", "\x03")
	c.waitExit()
}

func TestDemoHubConsoleSaysWhereRulesAreWritten(t *testing.T) {
	c := newConsole(t)
	c.start("demo", "--hub")
	c.waitFor("plan.md")
	mark := c.mark()
	c.press("R")
	c.waitForAfter(mark, "the policy is on each relay's host")
	c.press("\x03", "\x03")
	c.waitExit()
}

func TestConsoleWiringCopy(t *testing.T) {
	c := startConsole(t)
	c.ask("builder", "make copyme")
	c.press("c")
	want := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte("make copyme"))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.raw(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("c sent no OSC 52 copy of the value")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConsoleWiringQuitChoices(t *testing.T) {
	t.Run("deny", func(t *testing.T) {
		c := startConsole(t)
		got := c.ask("builder", "make wait")
		mark := c.mark()
		c.press("q")
		c.waitForAfter(mark, "waiting for a person")
		mark = c.mark()
		c.press("y") // a habit decides nothing here (decision 0150)
		c.waitForAfter(mark, "y does not quit here")
		c.press("D")
		c.wantDenied(got, "permtui exited")
		c.waitExit()
	})
	t.Run("leave", func(t *testing.T) {
		c := startConsole(t)
		got := c.ask("builder", "make later")
		mark := c.mark()
		c.press("q")
		c.waitForAfter(mark, "waiting for a person")
		c.press("L")
		c.waitExit()
		c.wantLeft(got)
	})
	t.Run("ctrl+c twice", func(t *testing.T) {
		c := startConsole(t)
		got := c.ask("builder", "make interrupt")
		c.press("\x03", "\x03")
		c.waitExit()
		c.wantLeft(got)
	})
}

// openPTY opens a pseudo-terminal of the given size: the master for the
// test, the slave for permtui's stdin, stdout and stderr.
func openPTY(t *testing.T, rows, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here (%v): the console wiring needs one", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestConsoleWiringEachScope: s offers this subagent (the child records the
// grant), both directions for it (the family width), and the whole session
// both directions (permtui records the widened grant).
func TestConsoleWiringEachScope(t *testing.T) {
	c := startConsole(t)
	got := c.ask("builder", "make vet")
	c.press("s", "\r")
	c.wantApproved(got, wire.StateApprovedForSession)
	if g := c.store().For(wiringRoot); len(g) != 0 {
		t.Fatalf("this subagent recorded a whole-session grant: %+v", g)
	}

	outside := filepath.Join(c.home, "elsewhere", "lib.rs")
	pathAsk := func() <-chan pichild.Result {
		mark := c.mark()
		results := c.send(pichild.NewestPath(wiringRoot, "scout", "0198c3a4-0000-7000-8000-0000000000c4", c.project, "external_directory_read", outside))
		c.waitForAfter(mark, "lib.rs")
		return results
	}
	got = pathAsk()
	c.press("s", "j", "\r")
	if r := c.wantApproved(got, wire.StateApprovedForSession); r.Response.GrantWidth != wire.GrantWidthFamily {
		t.Fatalf("both directions for this subagent: grant width %q", r.Response.GrantWidth)
	}

	got = pathAsk()
	c.press("s", "j", "j", "j", "\r")
	c.wantApproved(got, wire.StateApproved)
	g := c.store().For(wiringRoot)
	if len(g) != 1 || g[0].Surface != "external_directory" {
		t.Fatalf("the whole session, both directions: grants %+v, want one on the external_directory family", g)
	}
}
