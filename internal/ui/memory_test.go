package ui

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// Issue 8 scenario 2: what the console keeps after or beside an ask is
// bounded in bytes, however large the request's strings are (a request file
// may be 1 MiB, so one string may be about 1 MiB).

const mib = 1 << 20

// huge is a distinct string of n bytes, so nothing is shared between asks.
func huge(i, n int) string {
	p := fmt.Sprintf("%08d", i)
	return p + strings.Repeat("x", n-len(p))
}

// maxLogEntryBytes is what the clipped sizes add up to for one log entry
// (label, by, choice, reason, note): decision 0120's bound.
const maxLogEntryBytes = 6 << 10

// size is the text a log entry keeps, in bytes.
func (l logEntry) size() int {
	return len(l.label) + len(l.by) + len(l.choice) + len(l.reason) + len(l.note)
}

// retained runs f and reports how much more heap is live afterwards.
func retained(f func()) uint64 {
	before := testkit.LiveHeap()
	f()
	after := testkit.LiveHeap()
	if after < before {
		return 0
	}
	return after - before
}

// hugeDecision is an automatic answer to an ask whose agent, value, rule
// pattern and denial reason are each about 1 MiB (agent i: distinct).
func hugeDecision(i int, agent string) serve.Decided {
	r := &wire.Request{ID: fmt.Sprintf("1796233170000-m%d-48311", i), RequesterAgentName: agent,
		Surface: sp("bash"), Value: sp(huge(i, mib)), CreatedAt: ms(testNow)}
	a := ask(r.ID+".json", r, askVerdict("x"))
	by := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp(huge(i, mib)), Origin: sp("global")}
	return serve.Decided{Ask: a, Auto: true,
		Response: wire.Response{State: wire.StateDeniedWithReason, DenialReason: huge(i, mib), DecidedBy: by}}
}

// The decision log keeps a clipped label per answer, not the request: 200
// answers of 3 MiB of strings each leave well under 8 MiB behind.
func TestDecisionLogKeepsBoundedBytesPerEntry(t *testing.T) {
	h := newHarness(t)
	const n = 200
	got := retained(func() {
		for i := range n {
			h.events(hugeDecision(i, "reviewer"))
		}
	})
	if len(h.m.log) != n {
		t.Fatalf("log has %d entries, want %d", len(h.m.log), n)
	}
	if got > 8*mib {
		t.Fatalf("%d answers of ~3 MiB of strings left %d MiB live, want under 8", n, got/mib)
	}
	for _, l := range h.m.log {
		if s := l.size(); s > maxLogEntryBytes {
			t.Fatalf("a log entry keeps %d bytes of text, want at most %d", s, maxLogEntryBytes)
		}
	}
	// What is cut says so, with how much: 1 MiB less the 1 KiB kept.
	if l := h.m.log[0]; !strings.Contains(l.label, "…[1047552 bytes left out]…") || !strings.HasPrefix(l.label, "reviewer · bash · 00000000x") {
		t.Fatalf("the log does not say what it cut: %.200q", l.label)
	}
	h.keys("l")
	if v := h.m.View(); !strings.Contains(v, "bytes left") {
		t.Fatalf("the log does not say what it cut:\n%s", v)
	}
	runtime.KeepAlive(h)
}

// Per-agent counts keep at most maxAgents names, each clipped; the rest are
// counted together and said to be.
func TestAutoCountsPerAgentAreBounded(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40)) // tall enough for the full header
	const n = maxAgents + 36
	got := retained(func() {
		for i := range n {
			h.events(hugeDecision(i, huge(i, mib)))
		}
	})
	if len(h.m.autoByAgent) > maxAgents {
		t.Fatalf("%d agents counted by name, want at most %d", len(h.m.autoByAgent), maxAgents)
	}
	if got > 8*mib {
		t.Fatalf("%d agents with 1 MiB names left %d MiB live, want under 8", n, got/mib)
	}
	v := h.m.View()
	if !strings.Contains(v, "auto by agent:") {
		t.Fatalf("no per-agent line:\n%s", v)
	}
	if h.m.otherAgents.denied != n-maxAgents {
		t.Fatalf("other agents counted %+v, want %d denied", h.m.otherAgents, n-maxAgents)
	}
	if line := ansi.Strip(strings.Join(h.m.activityLines(), "\n")); !strings.HasSuffix(line, " · other agents ✗36") {
		t.Fatalf("the agents beyond the cap are not shown as counted together:\n%s", line)
	}
	runtime.KeepAlive(h)
}

// bigFileWrite is a write of one short line to /w/big/<i>.txt, a file
// whose current content is about 1 MiB: its diff removes 2,000 lines of
// 512 bytes, about 1 MiB kept.
func bigFileWrite(i int) serve.Ask {
	a := pathWrite()
	r := *a.Request
	r.ID = fmt.Sprintf("1796233170000-d%d-48311", i)
	path := fmt.Sprintf("/w/big/%d.txt", i)
	ai := *r.AccessIntent
	ai.MatchValues, ai.BoundaryValue = []string{path}, sp(path)
	r.AccessIntent = &ai
	return ask(r.ID+".json", &r, a.Verdict)
}

// bigFiles reads every /w/big file as 2,048 lines of 512 bytes, a fresh
// copy each time, and counts the reads.
func bigFiles(reads *int) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		*reads++
		if !strings.HasPrefix(p, "/w/big/") {
			return noFiles(p)
		}
		return []byte(strings.Repeat(p+strings.Repeat("z", 511-len(p))+"\n", 2048)), nil
	}
}

// The diffs kept for waiting asks stay within diffBudget over the whole
// queue; the asks beyond it keep none until shown.
func TestKeptDiffsStayWithinTheBudget(t *testing.T) {
	reads := 0
	h := newHarness(t, func(o *Options) { o.ReadFile = bigFiles(&reads) })
	const n = 40 // about 40 MiB of diffs
	got := retained(func() {
		for i := range n {
			h.queue(bigFileWrite(i))
		}
	})
	if got > diffBudget+4*mib {
		t.Fatalf("%d write asks against 1 MiB files left %d MiB live, want under %d", n, got/mib, (diffBudget+4*mib)/mib)
	}
	kept := 0
	for _, e := range h.m.queue {
		if e.diff != nil {
			kept += e.diff.Size()
		}
	}
	if kept > diffBudget || int64(kept) != h.m.diffs.Bytes() || kept == 0 {
		t.Fatalf("diffs kept: %d bytes (counted %d), budget %d", kept, h.m.diffs.Bytes(), diffBudget)
	}
	if last := h.m.queue[n-1]; last.diff != nil || last.diffState != diffDropped {
		t.Fatalf("the last ask's diff is kept beyond the budget (state %d)", last.diffState)
	}
	runtime.KeepAlive(h)
}

// An ask whose diff was not kept has it read again when it is highlighted,
// in a command, and the view says the file was read later than the ask
// arrived. Answering asks frees their diffs' bytes.
func TestADiffNotKeptIsReadWhenShown(t *testing.T) {
	reads := 0
	h := newHarness(t, func(o *Options) { o.ReadFile = bigFiles(&reads) })
	const n = 40
	for i := range n {
		h.queue(bigFileWrite(i))
	}
	for range n - 2 {
		h.keys("j")
	}
	before := reads
	_, cmd := h.m.Update(keyMsg("j")) // onto the last ask
	if reads != before {
		t.Fatal("Update read a file")
	}
	h.run(cmd)
	e := h.m.current()
	if reads != before+1 || e.diff == nil || e.diffState != diffKept {
		t.Fatalf("the highlighted ask's diff was not read when shown (%d reads, state %d)", reads-before, e.diffState)
	}
	if h.m.diffs.Bytes() > diffBudget+int64(e.diff.Size()) {
		t.Fatalf("diffs kept: %d bytes, budget %d", h.m.diffs.Bytes(), diffBudget)
	}
	h.keys("v")
	v := h.m.View()
	for _, want := range []string{"(against the file as it is now)", "read at 18:00:", "not when it arrived"} {
		if !strings.Contains(v, want) {
			t.Fatalf("the full view lacks %q:\n%s", want, v)
		}
	}
	h.keys("esc")
	for range n {
		h.m.Update(EventMsg{Event: serve.Decided{Ask: h.m.queue[0].ask, Auto: true, Response: wire.Response{Approved: true, State: wire.StateApproved}}})
	}
	if len(h.m.queue) != 0 || h.m.diffs.Bytes() != 0 || h.m.diffs.Count() != 0 {
		t.Fatalf("%d asks left, %d diff bytes still counted", len(h.m.queue), h.m.diffs.Bytes())
	}
}

// Expired asks stay in the queue, greyed, until cleared, but serve has let
// them go: the console keeps at most maxExpiredKept of them (the header
// counts all, the log names each), and none keeps its diff.
func TestExpiredAsksKeptAreBounded(t *testing.T) {
	reads := 0
	h := newHarness(t, func(o *Options) { o.ReadFile = bigFiles(&reads) })
	const n = 100
	got := retained(func() {
		for i := range n {
			a := bigFileWrite(i)
			a.Request.Value = sp(huge(i, mib))
			h.queue(a)
			h.events(withdrawn(a.ID, true))
		}
	})
	if len(h.m.queue) > maxExpiredKept || h.m.expired != n {
		t.Fatalf("%d expired asks kept, %d counted; want at most %d kept, %d counted", len(h.m.queue), h.m.expired, maxExpiredKept, n)
	}
	if h.m.diffs.Bytes() != 0 {
		t.Fatalf("expired asks keep %d bytes of diffs", h.m.diffs.Bytes())
	}
	if bound := uint64(maxExpiredKept)*mib*3/2 + 4*mib; got > bound {
		t.Fatalf("%d expired 1 MiB asks left %d MiB live, want under %d", n, got/mib, bound/mib)
	}
	if v := h.m.View(); !strings.Contains(v, "⌛ 100 expired") {
		t.Fatalf("the header does not count every expired ask:\n%s", v)
	}
	runtime.KeepAlive(h)
}

// nopRules previews every rule as nothing and keeps no draft.
type nopRules struct{}

func (nopRules) PreviewRule(RuleDraft) RulePreview                { return RulePreview{} }
func (nopRules) WriteRule(RuleDraft, int, string) (string, error) { return "", nil }

// A closed overlay keeps nothing of an ask: the full view's lines and the
// rule dialog's facts of the waiting asks go when they close, so an answered
// ask's strings are not kept alive until the overlay opens again.
func TestClosedOverlaysKeepNoAsk(t *testing.T) {
	h := newHarness(t, withRules(nopRules{}))
	got := retained(func() {
		a := bashChain()
		r := *a.Request
		ai := *r.AccessIntent
		ai.MatchValues = []string{huge(1, mib)}
		r.AccessIntent = &ai
		a = ask("huge.json", &r, a.Verdict)
		h.queue(a)
		h.keys("v", "esc", "R", "esc")
		h.events(serve.Decided{Ask: a, Auto: true, Response: wire.Response{Approved: true, State: wire.StateApproved}})
	})
	if len(h.m.queue) != 0 || h.m.mode != modeQueue {
		t.Fatalf("queue %d, mode %d", len(h.m.queue), h.m.mode)
	}
	if got > mib/2 {
		t.Fatalf("an answered 1 MiB ask left %d KiB live after its overlays closed", got>>10)
	}
	runtime.KeepAlive(h)
}

// Entries of earlier runs, from the audit log, and notes are clipped like
// answers: a recorded 1 MiB agent, value, grant pattern or reason, or a
// rejected request's 1 MiB reason, keeps no more than an entry's bound.
func TestHistoryAndNotesAreClipped(t *testing.T) {
	h := newHarness(t)
	h.events(serve.History{Records: []serve.AuditRecord{{Agent: huge(1, mib), Surface: "bash", MatchValues: []string{huge(2, mib)},
		State: wire.StateDeniedWithReason, Reason: huge(3, mib), Grants: []wire.Grant{{Surface: "bash", Pattern: huge(4, mib)}},
		DecidedBy: &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp(huge(5, mib)), Origin: sp("global")}}}},
		serve.Invalid{Invalid: inbox.Invalid{Path: "/fwd/x.json", Reason: huge(6, mib)}})
	if len(h.m.log) != 3 {
		t.Fatalf("log has %d entries", len(h.m.log))
	}
	for _, l := range h.m.log {
		if s := l.size(); s > maxLogEntryBytes {
			t.Fatalf("a log entry keeps %d bytes of text, want at most %d", s, maxLogEntryBytes)
		}
	}
	if len(h.m.status) > 2*textBytes {
		t.Fatalf("the status line keeps %d bytes", len(h.m.status))
	}
}

// An ask that expires while its file is being read keeps no diff when the
// read comes back: nothing can act on it.
func TestADiffReadWhileTheAskExpiredIsNotKept(t *testing.T) {
	reads := 0
	h := newHarness(t, func(o *Options) { o.ReadFile = bigFiles(&reads) })
	a := bigFileWrite(0)
	_, read := h.m.Update(EventMsg{Event: serve.AskQueued{Ask: a}})
	h.events(withdrawn(a.ID, true))
	h.run(read)
	if e := h.m.find(a.ID); e == nil || e.diff != nil || e.diffState != diffNone || h.m.diffs.Bytes() != 0 || h.m.diffReads.Count() != 0 {
		t.Fatalf("an expired ask kept its diff: %+v, %d bytes counted, %d reads", e, h.m.diffs.Bytes(), h.m.diffReads.Count())
	}
}
