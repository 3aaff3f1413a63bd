package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

const rootID = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"

// harness is a real serving loop over a real policy (bash asks, ls allowed)
// with the headless front end on its events, and pi children to ask it.
type harness struct {
	layout wire.Layout
	stop   func() // stops the server and the front end, as SIGTERM does
	served chan error
}

func start(t *testing.T, policy string) (*harness, *lockedBuffer, <-chan error) {
	t.Helper()
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"*":"ask","bash":{"*":"ask","ls":"allow"}}}`))
	// No project: the children ask from /w, which has none.
	judge := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, Home: root})
	store, err := grants.Open(filepath.Join(root, "state", "grants"))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{layout: wire.NewLayout(agentDir), served: make(chan error, 1)}
	cfg := serve.Config{Layout: h.layout, Sessions: []string{rootID}, StateDir: filepath.Join(root, "state"),
		Judge: func() serve.Judge { return judge }, Grants: store}
	cfg.Inbox.Rescan, cfg.Inbox.HeartbeatInterval = 50*time.Millisecond, 50*time.Millisecond
	srv, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.served <- srv.Run(ctx) }()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, srv, out, policy) }()
	var once bool
	h.stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		if err := <-h.served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(h.stop)
	return h, out, done
}

// ask runs a pi child's ask in the background.
func (h *harness) ask(ctx context.Context, req *wire.Request) <-chan pichild.Result {
	c := &pichild.Child{Layout: h.layout, Target: rootID, Poll: 5 * time.Millisecond, Timeout: testkit.WaitLimit, Liveness: true}
	out := make(chan pichild.Result, 1)
	go func() {
		res, _ := c.Ask(ctx, req)
		out <- res
	}()
	return out
}

func answered(t *testing.T, ch <-chan pichild.Result) *wire.ChildResponse {
	t.Helper()
	select {
	case res := <-ch:
		if res.Outcome != pichild.Answered {
			t.Fatalf("child: %+v (raw %s)", res, res.Raw)
		}
		return res.Response
	case <-time.After(testkit.WaitLimit):
		t.Fatal("the child got no answer")
		return nil
	}
}

// lockedBuffer is the headless output, safe to read while Run writes.
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

func TestHeadlessDeniesA2073AskTheChildAccepts(t *testing.T) {
	h, out, done := start(t, "")
	req := pichild.LegacyBash(rootID, "researcher\x1b[31m", "0198c3b0-1111-7222-8333-944455556666", "npm install left-pad")
	resp := answered(t, h.ask(context.Background(), req))
	if resp.Approved || resp.State != wire.StateDeniedWithReason || resp.DenialReason != serve.NoApproverReason {
		t.Fatalf("%+v", resp)
	}
	// Nobody decided: the wire must not claim a person did.
	if by := resp.DecidedBy; by == nil || by.Kind != wire.DecidedByUnavailable || by.Reason == nil || *by.Reason != serve.NoApproverReason {
		t.Fatalf("decidedBy = %+v, want unavailable with the no-approver reason", by)
	}
	h.stop()
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
	h, out, done := start(t, Leave)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	makeReq := pichild.NewestBash(rootID, "impl", "c1", "/w", "make")
	pending := h.ask(ctx, makeReq)
	out.waitLine(t, func(m map[string]any) bool { return m["event"] == "queued" && m["id"] == makeReq.ID })
	// Headless handles events in order: once a later ask's decided line is
	// out, a deny of the queued one would already have been written.
	lsReq := pichild.NewestBash(rootID, "impl", "c1", "/w", "ls")
	resp := answered(t, h.ask(context.Background(), lsReq))
	if by := resp.DecidedBy; !resp.Approved || by == nil || by.Kind != wire.DecidedByRule {
		t.Fatalf("ls: %+v", resp)
	}
	out.waitLine(t, func(m map[string]any) bool { return m["event"] == "decided" && m["id"] == lsReq.ID })
	if _, err := os.Stat(h.layout.RequestPath(rootID, makeReq.ID)); err != nil {
		t.Fatalf("left ask's request gone: %v", err)
	}
	if _, err := os.Stat(h.layout.ResponsePath(rootID, makeReq.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("left ask answered: %v", err)
	}
	// Stopping denies it as permtui exited (decision 0041).
	h.stop()
	resp = answered(t, pending)
	if resp.State != wire.StateDeniedWithReason || resp.DenialReason != serve.ExitReason {
		t.Fatalf("%+v", resp)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The exit denial is still reported after the front end was told to stop.
	out.waitLine(t, func(m map[string]any) bool {
		return m["event"] == "decided" && m["id"] == makeReq.ID && m["reason"] == serve.ExitReason
	})
}

func TestHeadlessRejectsAnUnknownPolicy(t *testing.T) {
	if err := Run(context.Background(), nil, &bytes.Buffer{}, "approve"); err == nil {
		t.Fatal("accepted an unknown ask policy")
	}
}

// A 40.x child's matchedSpelling is command-bearing: no headless line carries
// it (decision 0028).
func TestLinesNeverCarryTheMatchedSpelling(t *testing.T) {
	const spelling = "rm /w/secret-spelling"
	req := pichild.NewestBash(rootID, "impl", "c1", "/w", "rm ./x")
	req.Payload.Request.MatchedSpelling = &[]string{spelling}[0]
	ask := serve.Ask{Arrived: inbox.Arrived{ID: 1, Session: rootID, Request: req}}
	for _, ev := range []serve.Event{
		serve.Arrived{Ask: ask}, serve.AskQueued{Ask: ask},
		serve.Decided{Ask: ask, Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: wire.UserDecision()}},
	} {
		data, err := json.Marshal(lineOf(ev, "2026-12-04T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "secret-spelling") {
			t.Errorf("line carries the spelling: %s", data)
		}
	}
}

// A policy line without problems, and an ask whose facts judge no values,
// print empty lists, not null: a reader may take the field as a list.
func TestEmptyListsPrintAsEmptyLists(t *testing.T) {
	req := pichild.NewestBash(rootID, "impl", "c1", "/w", "ls")
	req.AccessIntent.MatchValues = nil
	ask := serve.Ask{Arrived: inbox.Arrived{ID: 1, Session: rootID, Request: req}}
	for _, c := range []struct {
		ev   serve.Event
		want string
	}{{serve.PolicyStatus{}, `"problems":[]`}, {serve.AskQueued{Ask: ask}, `"values":[]`}} {
		data, err := json.Marshal(lineOf(c.ev, "2026-12-04T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), c.want) {
			t.Errorf("want %s in %s", c.want, data)
		}
	}
}

// An ask judged without the project at its cwd says so on its arrived line,
// where the verdict alone read "ask" (decision 0234).
func TestAnArrivedLineNamesTheProjectJudgedWith(t *testing.T) {
	req := pichild.NewestBash(rootID, "builder", "c1", "/w/b", "git push")
	for _, c := range []struct {
		outside string
		want    bool
	}{{"/w/a", true}, {"", false}} {
		ask := serve.Ask{Arrived: inbox.Arrived{ID: 1, Session: rootID, Request: req},
			Verdict: resolve.Verdict{Action: resolve.Ask, OutsideProject: c.outside}}
		data, err := json.Marshal(lineOf(serve.Arrived{Ask: ask}, "2026-12-04T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(data), `"outsideProject":"/w/a"`); got != c.want || !c.want && strings.Contains(string(data), "outsideProject") {
			t.Errorf("outside %q: %s", c.outside, data)
		}
	}
}

// Issue 11: every line carries when it was printed, and an ask's line the
// values judged; the policy line says when no policy file was found.
func TestLinesCarryTimeAndValues(t *testing.T) {
	h, out, done := start(t, "")
	req := pichild.NewestBash(rootID, "impl", "0198c3b0-1111-7222-8333-944455556666", "/w", "make test")
	answered(t, h.ask(context.Background(), req))
	h.stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, m := range out.lines(t) {
		at, _ := m["at"].(string)
		if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
			t.Errorf("line %v: at: %v", m, err)
		}
		if m["event"] == "queued" {
			if vs, _ := m["values"].([]any); len(vs) != 1 || vs[0] != "make test" {
				t.Errorf("queued line values = %v", m["values"])
			}
		}
	}
	line := otherLine(serve.PolicyStatus{NoFile: "no policy file found; looked in \"/x\""})
	if line["noFile"] != "no policy file found; looked in \"/x\"" || line["project"] != nil {
		t.Fatalf("policy line %v", line)
	}
	// Whether a project policy is in force and its allows held (decision 0206).
	for _, held := range []bool{true, false} {
		line = otherLine(serve.PolicyStatus{ProjectFiles: []string{"/p/config.json"}, ProjectAllowsHeld: held})
		project, _ := line["project"].(map[string]any)
		if files, _ := project["files"].([]string); len(files) != 1 || files[0] != "/p/config.json" || project["allowsHeld"] != held {
			t.Fatalf("policy line %v", line)
		}
	}
}

// eventSource is a Server that replays fixed events and refuses decisions.
type eventSource chan serve.Event

func (e eventSource) Events() <-chan serve.Event { return e }
func (eventSource) Decide(serve.Decision) error  { return serve.ErrUnknownAsk }

// Headless lines are read on terminals too: a request's agent name or a
// rejected file's name must not carry a C1 control (U+009B is the 8-bit CSI)
// or a bidi override there. The JSON encoder escapes only C0 controls.
func TestLinesEscapeTerminalControlsBeyondC0(t *testing.T) {
	const hostile = "x\u009b31mred\u202eevil\u2066"
	req := pichild.NewestBash(rootID, hostile, "c1", "/w", "ls")
	ask := serve.Ask{Arrived: inbox.Arrived{ID: 1, Session: rootID, Request: req}}
	events := eventSource(make(chan serve.Event, 2))
	events <- serve.AskQueued{Ask: ask}
	events <- serve.Invalid{Invalid: inbox.Invalid{Session: rootID, Path: "/r/requests/" + hostile + ".json", Reason: "bad"}}
	close(events)
	var out bytes.Buffer
	if err := Run(context.Background(), events, &out, Leave); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r == 0x9b || r == 0x202e || r == 0x2066 {
			t.Fatalf("output carries %U as it is: %q", r, out.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", lines)
	}
	var queued, invalid map[string]any
	if json.Unmarshal([]byte(lines[0]), &queued) != nil || json.Unmarshal([]byte(lines[1]), &invalid) != nil {
		t.Fatalf("lines are not JSON: %q", lines)
	}
	if queued["agent"] != hostile || !strings.Contains(invalid["path"].(string), hostile) {
		t.Fatalf("escaping changed the values: %v %v", queued, invalid)
	}
}

// Session denies are printed when they change (and at start), with their
// surface, pattern and the person's reason.
func TestSessionDeniesLine(t *testing.T) {
	events := eventSource(make(chan serve.Event, 1))
	events <- serve.DeniesChanged{Denies: map[string][]serve.SessionDeny{
		rootID: {{Grant: wire.Grant{Surface: "bash", Pattern: "rm *"}, Reason: "no deleting"}}}}
	close(events)
	var out bytes.Buffer
	if err := Run(context.Background(), events, &out, Leave); err != nil {
		t.Fatal(err)
	}
	var line struct {
		Event  string
		Denies map[string][]struct{ Surface, Pattern, Reason string }
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if d := line.Denies[rootID]; line.Event != "session_denies" || len(d) != 1 || d[0].Pattern != "rm *" || d[0].Reason != "no deleting" {
		t.Fatalf("line %q", out.String())
	}
}

func TestSkippedLineCountsWhatWasNotPrinted(t *testing.T) {
	line := otherLine(serve.Skipped{Arrived: 5, Approved: 3, Denied: 2, AutoApproved: 7, AutoDenied: 6, Invalid: 1})
	if line["event"] != "skipped" || line["arrived"] != 5 || line["approved"] != 3 || line["denied"] != 2 ||
		line["autoApproved"] != 7 || line["autoDenied"] != 6 || line["invalid"] != 1 {
		t.Fatalf("skipped line %v", line)
	}
}

// lostSource is a Server over a hub whose every decision another approver
// made first.
type lostSource struct{ eventSource }

func (lostSource) Decide(serve.Decision) error {
	return fmt.Errorf("%w by %q", serve.ErrAlreadyDecided, "bob")
}

// A headless approver that loses a decision race prints nothing for it:
// the Decided line that follows names the winner (issue 20: 1,439 error
// lines for 800 asks two approvers raced over).
// An ask answered or withdrawn before the decision reached it is reported
// by its own event too (eventSource refuses every decision as unknown).
func TestLostDecisionRacesPrintNoError(t *testing.T) {
	req := pichild.NewestBash(rootID, "builder", "c1", "/w", "ls")
	for _, source := range []func(eventSource) Server{
		func(e eventSource) Server { return lostSource{e} },
		func(e eventSource) Server { return e },
	} {
		events := eventSource(make(chan serve.Event, 1))
		events <- serve.AskQueued{Ask: serve.Ask{Arrived: inbox.Arrived{ID: 1, Session: rootID, Request: req}}}
		close(events)
		var out bytes.Buffer
		if err := Run(context.Background(), source(events), &out, Deny); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), `"error"`) {
			t.Fatalf("a lost race printed an error: %s", out.String())
		}
	}
}

// Events headless does not print (a restarted server's history) print
// nothing, not a null line, even among printed ones taken in one batch.
func TestUnprintedEventsPrintNothing(t *testing.T) {
	events := eventSource(make(chan serve.Event, 3))
	events <- serve.History{Records: []serve.AuditRecord{{RequestID: "r"}}}
	events <- serve.Serving{Serving: inbox.Serving{Session: rootID}}
	events <- serve.History{}
	close(events)
	var out bytes.Buffer
	if err := Run(context.Background(), events, &out, Leave); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"event":"serving"`) {
		t.Fatalf("want only the serving line, got %q", lines)
	}
}

// stoppingSource is a Server whose first decision arrives as the server is
// told to stop (SIGTERM while a batch of asks is being denied).
type stoppingSource struct {
	eventSource
	stop    context.CancelFunc
	decided []serve.AskID
}

func (s *stoppingSource) Decide(d serve.Decision) error {
	s.decided = append(s.decided, d.Ask)
	s.stop()
	return nil
}

// Once ctx is done headless decides nothing more, also for asks taken in
// the same batch as the one it was deciding: they are left for the
// shutdown (denied, or left for the next relay with LeaveOnExit).
func TestNoDecisionAfterStopWithinABatch(t *testing.T) {
	req := pichild.NewestBash(rootID, "builder", "c1", "/w", "ls")
	events := eventSource(make(chan serve.Event, 3))
	for id := range serve.AskID(3) {
		events <- serve.AskQueued{Ask: serve.Ask{Arrived: inbox.Arrived{ID: id + 1, Session: rootID, Request: req}}}
	}
	close(events)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &stoppingSource{eventSource: events, stop: cancel}
	var out bytes.Buffer
	if err := Run(ctx, src, &out, Deny); err != nil {
		t.Fatal(err)
	}
	if len(src.decided) != 1 || src.decided[0] != 1 {
		t.Fatalf("decided %v after the stop; want only ask 1, decided before it", src.decided)
	}
	if n := strings.Count(out.String(), `"event":"queued"`); n != 3 {
		t.Fatalf("%d queued lines, want all 3 printed: %s", n, out.String())
	}
}

// writeSizes records the size of each write.
type writeSizes struct{ sizes []int }

func (w *writeSizes) Write(b []byte) (int, error) {
	w.sizes = append(w.sizes, len(b))
	return len(b), nil
}

// Events that keep coming while a batch is printed (asks denied one by
// one, each waiting for the audit's fsync, while more arrive) are written
// in bounded pieces, not held in memory until the stream pauses.
func TestABatchIsWrittenInBoundedPieces(t *testing.T) {
	req := pichild.NewestBash(rootID, "builder", "c1", "/w", "ls")
	const n = 2000
	events := eventSource(make(chan serve.Event, n))
	for id := range serve.AskID(n) {
		events <- serve.AskQueued{Ask: serve.Ask{Arrived: inbox.Arrived{ID: id + 1, Session: rootID, Request: req}}}
	}
	close(events)
	var out writeSizes
	if err := Run(context.Background(), events, &out, Leave); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, size := range out.sizes {
		total += size
		if size > maxBatchBytes+4096 {
			t.Fatalf("a write of %d bytes; a batch is written by %d", size, maxBatchBytes)
		}
	}
	if total < 2*maxBatchBytes {
		t.Fatalf("only %d bytes printed for %d asks: the test does not exceed one batch", total, n)
	}
}
