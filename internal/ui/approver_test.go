package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
			if s := h.m.status; !strings.Contains(s, "npm run race") || !strings.Contains(s, `already decided by "bob"`) {
				t.Fatalf("the status does not say ann's choice lost to bob: %q", s)
			}
			h.keys("l")
			if v := h.m.View(); !strings.Contains(v, "a person · bob") {
				t.Fatalf("the log does not say bob denied it:\n%s", v)
			}
		})
	}
}
