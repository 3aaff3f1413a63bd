package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// The tests of issue 19: nothing is decided that the screen does not name
// at that moment.

// A selection is named where the decision is made: the footer and the
// detail say what y acts on, moving the highlight off the selection warns,
// and esc clears it.
func TestSelectionIsNamedWhereTheDecisionIsMade(t *testing.T) {
	h := newHarness(t)
	destroy, vet := bashChain(), pathWrite()
	h.queue(destroy, vet)
	h.keys("space", "j")
	h.wantStatus("not on the highlighted ask")
	v := ansi.Strip(h.m.View())
	footer := strings.Join(strings.Split(v, "\n")[19:], "\n")
	if !strings.Contains(footer, "y approves 1 selected: deployer · bash · cd /w/p && git push") {
		t.Fatalf("the footer does not name the selection:\n%s", v)
	}
	if !strings.Contains(v, "⚠ not selected: y n r act on the 1 selected ask, not on this one") {
		t.Fatalf("the detail does not warn that the highlight is not selected:\n%s", v)
	}
	h.keys("esc")
	if h.m.selectedCount() != 0 {
		t.Fatal("esc did not clear the selection")
	}
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: vet.ID, State: wire.StateApproved})
}
