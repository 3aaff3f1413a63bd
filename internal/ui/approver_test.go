package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// A person's answer given elsewhere (the approve page, a hub approver)
// says where in the console's decision log.
func TestTheLogNamesWhereAPersonAnswered(t *testing.T) {
	h := newHarness(t)
	r := &wire.Request{ID: "1796233170000-web1-48311", RequesterAgentName: "builder", Surface: sp("bash"), Value: sp("make"), CreatedAt: ms(testNow)}
	a := ask(r.ID+".json", r, askVerdict("x"))
	h.events(serve.AskQueued{Ask: a}, serve.Decided{Ask: a, Queued: true, Approver: "web:3f2a9c1b7d0e",
		Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: wire.UserDecision()}})
	h.keys("l")
	// Not "you": at a hub another approver may have answered (second
	// adversarial pass, finding 12: bob's answers were logged "by you · bob").
	if v := h.m.View(); !strings.Contains(v, "a person · web:3f2a9c1b7d0e") || strings.Contains(v, "you · web") {
		t.Fatalf("the log does not name the approve page:\n%s", v)
	}
}

// Two approvers at a hub: bob's denial wins while ann's approval is on its
// way. Whichever of the relay's outcome and the hub's refusal reaches ann's
// console first, it says who decided, what, and that her choice lost
// (adversarial pass adv2, finding F6: with the outcome first, the status
// kept "» approve once" and the refusal was dropped).
func TestALostRaceIsSaidInEitherOrder(t *testing.T) {
	lost := fmt.Errorf("%w by %s", serve.ErrAlreadyDecided, `"bob"`)
	for _, outcomeFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("outcomeFirst=%v", outcomeFirst), func(t *testing.T) {
			h := newHarness(t)
			h.backend.decideErr = lost
			r := &wire.Request{ID: "1796233170000-race-48311", RequesterAgentName: "builder", Surface: sp("bash"), Value: sp("npm run race"), CreatedAt: ms(testNow)}
			a := ask(r.ID+".json", r, askVerdict("x"))
			h.queue(a)
			h.now = h.now.Add(time.Second)
			_, cmd := h.m.Update(keyMsg("y"))
			bob := serve.Decided{Ask: a, Queued: true, Approver: "bob",
				Response: wire.Response{Approved: false, State: wire.StateDenied, DecidedBy: wire.UserDecision()}}
			if outcomeFirst {
				h.events(bob)
				h.run(cmd)
			} else {
				h.run(cmd)
				h.events(bob)
			}
			if s := h.m.status; !strings.Contains(s, "npm run race") || !strings.Contains(s, `already decided by "bob"; it was ✗ denied by a person · bob`) {
				t.Fatalf("the status does not say ann's choice lost to bob: %q", s)
			}
			h.keys("l")
			if v := h.m.View(); !strings.Contains(v, "a person · bob") {
				t.Fatalf("the log does not say bob denied it:\n%s", v)
			}
		})
	}
}

// A decision the hub has not confirmed lives only in this console's
// approver, which keeps sending it: quitting drops it. The quit prompt
// names it and says it is lost, and the key that quits says so too
// (adversarial pass adv2, finding F7: the prompt was "L quit • esc stay"
// and the person left believing the ask approved).
func TestQuittingNamesTheDecisionsNotYetSent(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	h.backend.decideErr = fmt.Errorf("%w (nats: timeout)", serve.ErrDelivering)
	r := &wire.Request{ID: "1796233170000-down-48311", RequesterAgentName: "builder", Surface: sp("bash"), Value: sp("npm run hubdown"), CreatedAt: ms(testNow)}
	other := &wire.Request{ID: "1796233170000-calm-48311", RequesterAgentName: "scout", Surface: sp("bash"), Value: sp("ls"), CreatedAt: ms(testNow)}
	h.queue(ask(r.ID+".json", r, askVerdict("x")), ask(other.ID+".json", other, askVerdict("x")))
	h.keys("y", "y") // the second, on the same ask, is not what is being sent
	h.keys("q")
	v := h.m.View()
	for _, want := range []string{"1 decision is not confirmed by the hub", "approve once: builder · bash · npm run hubdown", "quitting now loses it and the", "L quit and lose it"} {
		if !strings.Contains(v, want) {
			t.Fatalf("the quit prompt does not say %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "scout · bash · ls") {
		t.Fatalf("an ask without a decision is named as unsent:\n%s", v)
	}
	h.keys("esc")
	// Once the ask ends (here the relay's answer arrives), nothing is unsent.
	h.events(serve.Decided{Ask: h.m.queue[0].ask, Queued: true, Approver: "ann",
		Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: wire.UserDecision()}})
	h.keys("q")
	if v := h.m.View(); strings.Contains(v, "not confirmed by the hub") || !strings.Contains(v, "L quit •") {
		t.Fatalf("a delivered decision is still named as unsent:\n%s", v)
	}
}

// Two asks whose values differ only in a lone surrogate read differently
// in the queue and the detail: what a person sees is what they approve
// (adversarial pass adv2, suspicion S5).
func TestLoneSurrogatesAreToldApart(t *testing.T) {
	h := newHarness(t)
	for i, v := range []string{"echo \xed\xa0\x80", "echo \xed\xbf\xbf"} {
		r := &wire.Request{ID: fmt.Sprintf("1796233170000-surr-%d", i), RequesterAgentName: "builder", Surface: sp("bash"), Value: sp(v), CreatedAt: ms(testNow)}
		h.queue(ask(r.ID+".json", r, askVerdict("x")))
	}
	if v := h.m.View(); !strings.Contains(v, "echo ⟨U+D800⟩") || !strings.Contains(v, "echo ⟨U+DFFF⟩") || strings.Contains(v, "���") {
		t.Fatalf("the queue does not tell the two values apart:\n%s", v)
	}
	h.keys("enter") // the detail of the first
	if v := h.m.View(); !strings.Contains(v, "value     echo ⟨U+D800⟩") {
		t.Fatalf("the detail does not spell the surrogate:\n%s", v)
	}
}

// Values that differ only in a zero-width character read differently in
// the queue, the detail and, once decided, the log and the status line,
// spelled once: text the console composed of shown values is not spelled
// again (decision 0253).
func TestFormatCharactersAreToldApartAndSpelledOnce(t *testing.T) {
	h := newHarness(t)
	for i, v := range []string{"rm x\u200b", "rm x\u200c"} {
		r := &wire.Request{ID: fmt.Sprintf("1796233170000-zw-%d", i), RequesterAgentName: "builder", Surface: sp("bash"), Value: sp(v), CreatedAt: ms(testNow)}
		h.queue(ask(r.ID+".json", r, askVerdict("x")))
	}
	if v := h.m.View(); !strings.Contains(v, "rm x⟨U+200B⟩") || !strings.Contains(v, "rm x⟨U+200C⟩") {
		t.Fatalf("the queue does not tell the two values apart:\n%s", v)
	}
	h.keys("enter")
	if v := h.m.View(); !strings.Contains(v, "value     rm x⟨U+200B⟩") {
		t.Fatalf("the detail does not spell the zero-width space:\n%s", v)
	}
	h.keys("esc")
	h.events(serve.Decided{Ask: h.m.queue[0].ask, Approver: "ann\u200b",
		Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: wire.UserDecision()}})
	h.events(serve.Invalid{Invalid: inbox.Invalid{Path: "x\u200b.json", Reason: "bad"}})
	if v := h.m.View(); !strings.Contains(v, "rejected request x⟨U+200B⟩.json") || strings.Contains(v, "⟨U+27E8⟩") {
		t.Fatalf("the status line does not spell the file name once:\n%s", v)
	}
	h.keys("l")
	v := h.m.View()
	if !strings.Contains(v, "rm x⟨U+200B⟩") || !strings.Contains(v, "ann⟨U+200B⟩") || !strings.Contains(v, "x⟨U+200B⟩.json") ||
		strings.Contains(v, "⟨U+27E8⟩") {
		t.Fatalf("the decided ask is not spelled once:\n%s", v)
	}
}
