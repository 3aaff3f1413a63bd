package ui

import (
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// The adversarial tester's follow-up to issue 19: "seen whole" means every
// line of what is approved was on screen at some point.

// A write of 101 lines with a malicious line 21: v shows the top, G jumps
// to the end, and the middle was never on screen, so y is refused and the
// status names the lines still unseen. Paging through all of it approves.
func TestAJumpOverTheMiddleOfAChangeIsNotSeeingIt(t *testing.T) {
	h := newHarness(t) // no file: a new file, every line added
	a := longEdit(101)
	h.queue(a)
	h.keys("v", "G", "y")
	h.wantDecisions()
	h.wantStatus("not seen yet")
	if !strings.Contains(h.m.status, "lines ") {
		t.Fatalf("the status does not say which lines are unseen: %q", h.m.status)
	}
	h.pageThrough()
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
}

// pageThrough pages the open full view from its top to its end.
func (h *harness) pageThrough() {
	h.t.Helper()
	h.keys("g")
	for !h.m.pager.vp.AtBottom() {
		h.keys("f") // a page down
	}
}
