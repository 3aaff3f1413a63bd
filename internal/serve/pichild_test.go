package serve

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// child is a pi child of the served root that polls fast.
func (h *harness) child(liveness bool) *pichild.Child {
	return &pichild.Child{Layout: h.layout, Target: rootID, Poll: 5 * time.Millisecond, Timeout: testkit.WaitLimit, Liveness: liveness}
}

type asked struct {
	res pichild.Result
	err error
}

// ask runs a child's ask in the background.
func (h *harness) ask(ctx context.Context, c *pichild.Child, req *wire.Request) <-chan asked {
	out := make(chan asked, 1)
	go func() {
		res, err := c.Ask(ctx, req)
		out <- asked{res, err}
	}()
	return out
}

func answered(t *testing.T, ch <-chan asked) *wire.ChildResponse {
	t.Helper()
	var a asked
	select {
	case a = <-ch:
	case <-time.After(testkit.WaitLimit):
		t.Fatal("the child got no answer")
	}
	if a.err != nil || a.res.Outcome != pichild.Answered {
		t.Fatalf("child: %+v, %v (raw %s)", a.res, a.err, a.res.Raw)
	}
	return a.res.Response
}

func TestNewestChildGetsRuleAnswersWithProvenance(t *testing.T) {
	h := startServer(t, options{})
	h.judge.set("git status", ruleVerdict(resolve.Allow, "", "git status*", "global", ""))
	h.judge.set("/etc/passwd", ruleVerdict(resolve.Deny, "", "/etc/*", "project", "system files are off limits"))
	allow := answered(t, h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "git status")))
	if !allow.Approved || allow.State != wire.StateApproved || allow.DecidedByStatus != wire.DecidedByKept {
		t.Fatalf("%+v", allow)
	}
	decidedByRule(t, allow.DecidedBy, "bash", "git status*", "global")
	deny := answered(t, h.ask(context.Background(), h.child(true), pichild.NewestPath(rootID, "impl", "c1", "/w", "path_read", "/etc/passwd")))
	if deny.Approved || deny.State != wire.StateDeniedWithReason || deny.DenialReason != "system files are off limits" {
		t.Fatalf("%+v", deny)
	}
	decidedByRule(t, deny.DecidedBy, "path_read", "/etc/*", "project")
}

func TestWholeSessionApprovalAutoApprovesAnotherAgentsChild(t *testing.T) {
	h := startServer(t, options{})
	first := h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "implementer", "c1", "/w", "npm test"))
	ask := h.rec.WaitFor(t, "queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession}); err != nil {
		t.Fatal(err)
	}
	resp := answered(t, first)
	if !resp.Approved || resp.State != wire.StateApproved {
		t.Fatalf("%+v", resp)
	}
	other := answered(t, h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "reviewer", "c2", "/w2", "npm test --watch")))
	if !other.Approved {
		t.Fatalf("%+v", other)
	}
	decidedByRule(t, other.DecidedBy, "bash", "npm test *", "session")
}

func TestChildThatGivesUpMakesDecideExpire(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var gaveUp <-chan asked
	h := startServer(t, options{
		// One scan at start: only Decide can notice the withdrawal.
		config: func(c *Config) { c.Poll, c.Inbox.PollRescan = true, time.Hour },
		before: func(h *harness) {
			req := pichild.NewestBash(rootID, "impl", "c1", "/w", "make")
			gaveUp = h.ask(ctx, h.child(false), req)
			for deadline := time.Now().Add(testkit.WaitLimit); ; time.Sleep(time.Millisecond) {
				if _, err := os.Stat(h.layout.RequestPath(rootID, req.ID)); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the child wrote no request")
				}
			}
		},
	})
	ask := h.rec.WaitFor(t, "queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask
	cancel() // the child gives up and removes its request
	if a := <-gaveUp; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("child: %+v", a)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); !errors.Is(err, ErrExpired) {
		t.Fatalf("Decide = %v, want ErrExpired", err)
	}
	if _, err := os.Stat(h.layout.ResponsePath(rootID, ask.Request.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("response written: %v", err)
	}
}

func TestChildGetsItsAnswerAfterAResponseWriteIsRepaired(t *testing.T) {
	h := startServer(t, options{})
	waiting := h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "make"))
	ask := h.rec.WaitFor(t, "queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask
	respDir := h.layout.ResponsesDir(rootID)
	if err := os.Remove(respDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(respDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	failed := h.rec.WaitFor(t, "write failed", func(ev Event) bool { _, ok := ev.(WriteFailed); return ok }).(WriteFailed)
	if !strings.Contains(failed.Err, "responses") {
		t.Fatalf("error %q", failed.Err)
	}
	if err := os.Remove(respDir); err != nil {
		t.Fatal(err)
	}
	resp := answered(t, waiting)
	if !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if n := h.rec.Count(func(ev Event) bool { _, ok := ev.(AskQueued); return ok }); n != 1 {
		t.Fatalf("asked %d times", n)
	}
}

// F8 through serve: a console and a standby on one forwarding root, each
// with its own state directory. Every child removes the session root after
// its answer; each next ask still goes to the console, answered as its
// person decides, and the standby never queues one.
func TestAStandbyLeavesEveryAskToTheConsoleAcrossChildCleanups(t *testing.T) {
	var pids []int
	for range 2 {
		p := exec.Command("sleep", "30")
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Process.Kill(); _ = p.Wait() })
		pids = append(pids, p.Process.Pid)
	}
	console := startServer(t, options{config: func(c *Config) { c.Inbox.PID = pids[0] }})
	console.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	standby := startServer(t, options{config: func(c *Config) {
		c.Layout, c.Inbox.PID, c.Inbox.LockRecheck = console.layout, pids[1], 10*time.Millisecond
	}})
	standby.rec.WaitFor(t, "standing by", func(ev Event) bool {
		e, ok := ev.(ServedElsewhere)
		return ok && e.PID == pids[0] && e.Permtui
	})
	cleanedUp := 0
	for i, value := range []string{"npm test", "npm run build", "npm run lint"} {
		child := console.child(true)
		child.RemoveEmptyDirs = true
		asking := console.ask(context.Background(), child, pichild.NewestBash(rootID, "builder", "c1", "/w", value))
		ask := console.rec.WaitFor(t, "queued "+value, func(ev Event) bool {
			q, ok := ev.(AskQueued)
			return ok && *q.Ask.Request.Value == value
		}).(AskQueued).Ask
		if err := console.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
			t.Fatal(err)
		}
		if resp := answered(t, asking); !resp.Approved {
			t.Fatalf("ask %d: %+v", i, resp)
		}
		// The console may recreate the directory as the child removes it;
		// one cleanup seen is enough for the test to mean something.
		if _, err := os.Stat(console.layout.SessionDir(rootID)); errors.Is(err, os.ErrNotExist) {
			cleanedUp++
		}
	}
	if cleanedUp == 0 {
		t.Fatal("the child never removed the session root: nothing was tested")
	}
	for _, ev := range standby.rec.Snapshot() {
		switch ev.(type) {
		case Serving, AskQueued:
			t.Fatalf("the standby took part: %+v", ev)
		}
	}
}
