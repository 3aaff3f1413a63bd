package ui

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// e2e is the whole chain: pi children write real request files, the real
// serving loop judges them, the console turns key presses into decisions and
// the children read the response files from disk.
type e2e struct {
	t      *testing.T
	layout wire.Layout
	state  string // the state dir: audit.jsonl
	tm     *teatest.TestModel
	out    bytes.Buffer
}

const e2eRoot = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"

func startE2E(t *testing.T) *e2e {
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"*":"ask","bash":{"*":"ask","git status":"allow"}}}`))
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, ProjectDir: root, TrustProject: true, Home: root})
	store, err := grants.Open(filepath.Join(root, "state", "grants"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{
		Layout: wire.NewLayout(agentDir), Sessions: []string{e2eRoot}, StateDir: filepath.Join(root, "state"),
		Judge: func() serve.Judge { return policy }, Grants: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()

	m := New(Options{Backend: srv, Refresh: -1, Settle: -1, Attention: io.Discard})
	e := &e2e{t: t, layout: wire.NewLayout(agentDir), state: filepath.Join(root, "state")}
	e.tm = teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	go func() {
		for ev := range srv.Events() {
			e.tm.Send(EventMsg{Event: ev})
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-served
		_ = e.tm.Quit()
	})
	return e
}

// ask starts a child in the background; its result arrives on the channel.
func (e *e2e) ask(req *wire.Request) <-chan pichild.Result {
	results := make(chan pichild.Result, 1)
	child := pichild.Child{Layout: e.layout, Target: e2eRoot, Liveness: true}
	go func() {
		res, err := child.Ask(context.Background(), req)
		if err != nil {
			e.t.Errorf("child: %v", err)
		}
		results <- res
	}()
	return results
}

// waitScreen waits until the console has drawn text.
func (e *e2e) waitScreen(text string) {
	e.t.Helper()
	teatest.WaitFor(e.t, io.TeeReader(e.tm.Output(), &e.out), func(b []byte) bool {
		return bytes.Contains(e.out.Bytes(), []byte(text))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	e.out.Reset()
}

func (e *e2e) answer(results <-chan pichild.Result) *wire.ChildResponse {
	e.t.Helper()
	select {
	case res := <-results:
		if res.Outcome != pichild.Answered {
			e.t.Fatalf("child outcome %s", res.Outcome)
		}
		return res.Response
	case <-time.After(10 * time.Second):
		e.t.Fatal("the child got no answer")
		return nil
	}
}

func TestEndToEndKeysBecomeResponseFiles(t *testing.T) {
	e := startE2E(t)
	const impl, res = "0198c3b0-1111-7222-8333-944455556666", "0198c3b1-2222-7333-8444-955566667777"

	makeTest := e.ask(pichild.NewestBash(e2eRoot, "implementer", impl, "/w/wt-42", "make test"))
	e.waitScreen("1 pending")
	rmBuild := e.ask(pichild.NewestBash(e2eRoot, "implementer", impl, "/w/wt-42", "rm -rf build"))
	e.waitScreen("2 pending")
	legacy := e.ask(pichild.LegacyBash(e2eRoot, "researcher", res, "curl -sL https://example.com/x.sh"))
	e.waitScreen("3 pending")

	// s, then "the whole session": permtui records "make test *" and answers approved.
	press(e.tm, "s")
	e.waitScreen("the whole session")
	press(e.tm, "j", "enter")
	if r := e.answer(makeTest); !r.Approved || r.State != wire.StateApproved || r.DecidedBy == nil || r.DecidedBy.Kind != wire.DecidedByUser {
		t.Fatalf("whole-session approval: %+v", r)
	}
	e.waitScreen("2 pending")

	// A later matching ask from another agent is approved by that grant, with no key pressed.
	later := e.answer(e.ask(pichild.NewestBash(e2eRoot, "researcher", res, "/w/wt-7", "make test ./api/...")))
	if !later.Approved || later.DecidedBy == nil || later.DecidedBy.Kind != wire.DecidedByRule ||
		later.DecidedBy.Origin == nil || *later.DecidedBy.Origin != "session" {
		t.Fatalf("ask covered by the grant: %+v", later)
	}

	// r: deny the highlighted ask (rm -rf build) with a reason.
	press(e.tm, "r")
	e.waitScreen("reason")
	e.tm.Type("not in this worktree")
	press(e.tm, "enter")
	if r := e.answer(rmBuild); r.Approved || r.State != wire.StateDeniedWithReason || r.DenialReason != "not in this worktree" {
		t.Fatalf("deny with reason: %+v", r)
	}
	e.waitScreen("1 pending")

	// y: approve the legacy ask (no facts, so it could only come to a person) once.
	press(e.tm, "y")
	if r := e.answer(legacy); !r.Approved || r.State != wire.StateApproved {
		t.Fatalf("approve once: %+v", r)
	}
	e.waitScreen("0 pending")
}

// A child's request is withdrawn and a later request arrives under the same
// file name (pi ids are the child's request ids): the console shows the later
// one as a new pending ask, and y answers that delivery only (issue 7).
func TestEndToEndARequestReusingAWithdrawnFileNameIsANewAsk(t *testing.T) {
	e := startE2E(t)
	const impl = "0198c3b0-1111-7222-8333-944455556666"

	first := pichild.NewestBash(e2eRoot, "implementer", impl, "/w/wt-42", "make")
	first.ID = "r-1"
	ctx, withdraw := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := (&pichild.Child{Layout: e.layout, Target: e2eRoot, Liveness: true}).Ask(ctx, first)
		gone <- err
	}()
	e.waitScreen("1 pending")
	withdraw() // the child gives up and removes its request file
	if err := <-gone; err == nil {
		t.Fatal("the withdrawn child got an answer")
	}
	e.waitScreen("0 pending")

	second := pichild.NewestBash(e2eRoot, "implementer", impl, "/w/wt-42", "rm -rf /")
	second.ID = "r-1"
	answered := e.ask(second)
	e.waitScreen("1 pending")
	press(e.tm, "j", "y") // past the expired make, to the new ask
	if r := e.answer(answered); !r.Approved || r.State != wire.StateApproved {
		t.Fatalf("the new r-1: %+v", r)
	}
	e.waitScreen("0 pending")
	// One decision, for the second delivery only; the withdrawn one has none
	// (delivery lines carry a kind and are not decisions).
	audit, err := os.ReadFile(filepath.Join(e.state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(audit)), "\n") {
		if !strings.HasPrefix(l, `{"kind":`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"askId":2,`) || !strings.Contains(lines[0], `"requestId":"r-1"`) || !strings.Contains(lines[0], `"matchValues":["rm -rf /"]`) ||
		!strings.Contains(lines[0], `"state":"approved"`) {
		t.Fatalf("audit log:\n%s", audit)
	}
}
