package ui

import (
	"strings"
	"testing"

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
