package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
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

// lockedBuffer is the headless output, safe to read while RunHeadless writes.
type lockedBuffer struct{ testkit.SyncBuffer }

func (b *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSuffix([]byte(b.String()), []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		for _, c := range line {
			if c < 0x20 {
				t.Fatalf("raw control character in %q", line)
			}
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// waitLine waits until some output line matches.
func (b *lockedBuffer) waitLine(t *testing.T, pred func(map[string]any) bool) {
	t.Helper()
	for deadline := time.Now().Add(testkit.WaitLimit); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		for _, m := range b.lines(t) {
			if pred(m) {
				return
			}
		}
	}
	t.Fatalf("no matching line in %v", b.lines(t))
}

// headless runs the headless front end on the harness's server; stopping
// the harness stops it too, as SIGTERM does in cmd.
func headless(t *testing.T, policy string) (*harness, *lockedBuffer, <-chan error) {
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	h := startServer(t, options{noRecorder: true})
	stopServer := h.stop
	h.stop = func() { cancel(); stopServer() }
	done := make(chan error, 1)
	go func() { done <- RunHeadless(ctx, h.s, out, policy) }()
	return h, out, done
}

func TestHeadlessDeniesA2073AskTheChildAccepts(t *testing.T) {
	h, out, done := headless(t, "")
	req := pichild.LegacyBash(rootID, "researcher\x1b[31m", "0198c3b0-1111-7222-8333-944455556666", "npm install left-pad")
	resp := answered(t, h.ask(context.Background(), h.child(false), req))
	if resp.Approved || resp.State != wire.StateDeniedWithReason || resp.DenialReason != NoApproverReason {
		t.Fatalf("%+v", resp)
	}
	// Nobody decided: the wire must not claim a person did.
	if by := resp.DecidedBy; by == nil || by.Kind != wire.DecidedByUnavailable || by.Reason == nil || *by.Reason != NoApproverReason {
		t.Fatalf("decidedBy = %+v, want unavailable with the no-approver reason", by)
	}
	h.shutdown()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	events := map[string]map[string]any{}
	for _, m := range out.lines(t) {
		events[m["event"].(string)] = m
	}
	for _, ev := range []string{"serving", "arrived", "queued", "decided"} {
		if events[ev] == nil {
			t.Fatalf("no %q line in %v", ev, out.lines(t))
		}
	}
	d := events["decided"]
	if d["state"] != "denied_with_reason" || d["id"] != req.ID || d["agent"] != "researcher\x1b[31m" || d["surface"] != "bash" || d["auto"] != false {
		t.Fatalf("decided line %v", d)
	}
	if _, ok := d["latencyMicros"].(float64); !ok {
		t.Fatalf("no latency in %v", d)
	}
	if by, _ := d["decidedBy"].(map[string]any); by["kind"] != "unavailable" {
		t.Fatalf("decidedBy %v", d["decidedBy"])
	}
	if events["arrived"]["verdict"] != "ask" {
		t.Fatalf("arrived line %v", events["arrived"])
	}
}

func TestHeadlessLeaveKeepsAsksPending(t *testing.T) {
	h, out, done := headless(t, HeadlessLeave)
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	makeReq := pichild.NewestBash(rootID, "impl", "c1", "/w", "make")
	pending := h.ask(ctx, h.child(true), makeReq)
	out.waitLine(t, func(m map[string]any) bool { return m["event"] == "queued" && m["id"] == makeReq.ID })
	// Headless handles events in order: once a later ask's decided line is
	// out, a deny of the queued one would already have been written.
	lsReq := pichild.NewestBash(rootID, "impl", "c1", "/w", "ls")
	resp := answered(t, h.ask(context.Background(), h.child(true), lsReq))
	decidedByRule(t, resp.DecidedBy, "bash", "ls", "global")
	out.waitLine(t, func(m map[string]any) bool { return m["event"] == "decided" && m["id"] == lsReq.ID })
	if _, err := os.Stat(h.layout.RequestPath(rootID, makeReq.ID)); err != nil {
		t.Fatalf("left ask's request gone: %v", err)
	}
	if _, err := os.Stat(h.layout.ResponsePath(rootID, makeReq.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("left ask answered: %v", err)
	}
	// Stopping denies it as permtui exited (decision 0041).
	h.shutdown()
	resp = answered(t, pending)
	if resp.State != wire.StateDeniedWithReason || resp.DenialReason != ExitReason {
		t.Fatalf("%+v", resp)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The exit denial is still reported after the front end was told to stop.
	out.waitLine(t, func(m map[string]any) bool {
		return m["event"] == "decided" && m["id"] == makeReq.ID && m["reason"] == ExitReason
	})
}

func TestHeadlessRejectsAnUnknownPolicy(t *testing.T) {
	h := startServer(t, options{})
	if err := RunHeadless(context.Background(), h.s, &bytes.Buffer{}, "approve"); err == nil {
		t.Fatal("accepted an unknown ask policy")
	}
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
