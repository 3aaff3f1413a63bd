package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/serve"
)

// An ask withdrawn because another file took its request's name (the child
// wrote its request again) says so in the status line, the detail, the log
// and, after a restart, the log rebuilt from its expiry line: not that the
// child stopped waiting, which it did not (adversarial pass, F5's label).
func TestAReplacedAskSaysItsFileWasReplaced(t *testing.T) {
	h := newHarness(t)
	h.events(serve.History{Records: []serve.AuditRecord{
		{Kind: serve.AuditExpired, Agent: "impl", Surface: "bash", MatchValues: []string{"make lint"}, Reason: serve.ReplacedReason,
			DecidedAt: testNow.Add(-time.Hour).UnixMilli()},
	}})
	a := legacyBash()
	h.queue(a)
	w := withdrawn(a.ID, true)
	w.Replaced = true
	h.events(w)
	h.wantStatus("(" + serve.ReplacedReason + ")")
	if v := h.m.View(); !strings.Contains(v, "⌛ expired: "+serve.ReplacedReason) || strings.Contains(v, "stopped waiting") {
		t.Fatalf("detail:\n%s", v)
	}
	h.keys("y")
	h.wantStatus("(" + serve.ReplacedReason + "); nothing was sent")
	h.keys("l")
	v := strings.Join(strings.Fields(h.m.View()), " ") // the log wraps its lines
	for _, want := range []string{"17:00:00 ⌛ expired  impl · bash · make lint (" + serve.ReplacedReason + ")",
		"⌛ expired  " + askLabel(a) + " (" + serve.ReplacedReason + ")"} {
		if want = strings.Join(strings.Fields(want), " "); !strings.Contains(v, want) {
			t.Fatalf("log lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "stopped waiting") {
		t.Fatalf("the log says the child stopped waiting:\n%s", v)
	}
}

// A hub ask whose relay now serves it under another host says it moved
// there, where it is asked again, in the status line, the detail and the
// log: not that the child stopped waiting (adversarial pass, F8's label).
func TestAMovedHubAskSaysWhereItMoved(t *testing.T) {
	h := newHarness(t)
	a := legacyBash()
	h.queue(a)
	w := withdrawn(a.ID, true)
	w.Why = "moved to beta, where it is asked again"
	h.events(w)
	const why = "moved to beta, where it is asked again"
	h.wantStatus("(" + why + ")")
	if v := h.m.View(); !strings.Contains(v, "⌛ expired: "+why) || strings.Contains(v, "stopped waiting") {
		t.Fatalf("detail:\n%s", v)
	}
	h.keys("l")
	v := strings.Join(strings.Fields(h.m.View()), " ")
	if want := strings.Join(strings.Fields("⌛ expired  "+askLabel(a)+" ("+why+")"), " "); !strings.Contains(v, want) || strings.Contains(v, "stopped waiting") {
		t.Fatalf("log lacks %q:\n%s", want, v)
	}
}

// A decision the hub took for an ask whose relay then let go of it with no
// answer (its request went while the relay was away) says in the log and
// the status line that it answered nothing, and why (finding F11: the row
// vanished as if answered and the log had no line).
func TestADecisionThatAnsweredNothingSaysSo(t *testing.T) {
	h := newHarness(t)
	a := legacyBash()
	h.queue(a)
	h.keys("y")
	if q := h.queueKeys(); len(q) != 0 {
		t.Fatalf("still queued after y: %v", q)
	}
	h.events(serve.Withdrawn{Withdrawn: withdrawn(a.ID, true).Withdrawn, Pending: true, Why: "its relay no longer has the request"})
	want := "your decision on " + askLabel(a) + " answered nothing: its relay no longer has the request"
	h.wantStatus(want)
	h.keys("l")
	if v := strings.Join(strings.Fields(h.m.View()), " "); !strings.Contains(v, strings.Join(strings.Fields("⚠ "+want), " ")) {
		t.Fatalf("log lacks %q:\n%s", want, v)
	}
}
