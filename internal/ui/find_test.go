package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

func TestFuzzyMatch(t *testing.T) {
	for _, c := range []struct {
		q, text string
		want    bool
	}{
		{"rvw app", "reviewer path_write /w/p/src/app.ts /w/p", true},
		{"REV", "reviewer", true},
		{"pwr", "path_write", true},
		{"wap", "path_write", false},
		{"deployer app", "reviewer path_write /w/p/src/app.ts", false},
		{"", "anything", true},
	} {
		if got := fuzzyMatch(c.q, c.text); got != c.want {
			t.Errorf("fuzzyMatch(%q, %q) = %v", c.q, c.text, got)
		}
	}
}

// / narrows the queue as it is typed; decisions act only on what is shown;
// esc clears the filter.
func TestFilterNarrowsTheQueue(t *testing.T) {
	h := newHarness(t)
	a, b, c := legacyBash(), pathWrite(), bashChain()
	h.queue(a, b, c)
	h.keys("/")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("~dep push")})
	if !h.m.filtering {
		t.Fatal("typing went elsewhere")
	}
	h.keys("enter")
	v := h.m.View()
	if !strings.Contains(v, "/~dep push: 1 of 3") || strings.Contains(v, "reviewer") {
		t.Fatalf("filter not applied:\n%s", v)
	}
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: c.ID, State: wire.StateApproved})
	h.keys("/", "x", "y", "z", "enter", "y") // nothing shown: nothing answered
	h.wantDecisions(serve.Decision{Ask: c.ID, State: wire.StateApproved})
	h.keys("esc")
	if h.m.filter != "" || len(h.m.shown()) != 2 {
		t.Fatalf("esc left filter %q, %d shown", h.m.filter, len(h.m.shown()))
	}
}

// t groups rows by root session and agent under headings with counts;
// moving follows the grouped order.
func TestGroupingBySessionAndAgent(t *testing.T) {
	h := newHarness(t)
	r1, d, r2 := pathWrite(), bashChain(), pathWrite()
	r2.ID += 5
	h.queue(r1, d, r2)
	h.keys("t")
	v := h.m.View()
	if !strings.Contains(v, "▾ root "+rootSession+" · reviewer · 2 asks") || !strings.Contains(v, "· deployer · 1 ask") {
		t.Fatalf("no group headings:\n%s", v)
	}
	h.keys("j")
	if h.m.highlight != r2.ID {
		t.Fatalf("j went to %v, want the second reviewer ask", h.m.highlight)
	}
	h.keys("t", "k") // arrival order again: the deployer's ask is above
	if h.m.highlight != d.ID {
		t.Fatalf("ungrouped k went to %v", h.m.highlight)
	}
}

// In the full view y, n, r and s act on the ask shown; q closes; g and G
// jump.
func TestFullViewDecides(t *testing.T) {
	h := newHarness(t)
	a, b, c := pathWrite(), bashChain(), legacyBash()
	h.queue(a, b, c)
	h.keys("v", "G")
	if h.m.pager.vp.AtTop() {
		t.Fatal("G did not jump to the bottom")
	}
	h.keys("g")
	if !h.m.pager.vp.AtTop() {
		t.Fatal("g did not jump to the top")
	}
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
	if h.m.mode != modeQueue {
		t.Fatal("the full view stayed open after deciding")
	}
	h.keys("v", "r", "no", "enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved},
		serve.Decision{Ask: b.ID, State: wire.StateDeniedWithReason, Reason: "no"})
	h.keys("v", "s")
	if h.m.mode != modeScope || h.m.scope.ask != c.ID {
		t.Fatalf("s from the full view: mode %v", h.m.mode)
	}
	h.keys("esc", "v", "q")
	if h.m.mode != modeQueue || h.quit {
		t.Fatalf("q did not close the full view (mode %v, quit %v)", h.m.mode, h.quit)
	}
}

// c copies the highlighted value with OSC 52, neutralized, and only on the
// key press.
func TestCopyHighlightedValue(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Bell = false })
	h.queue(pathWrite(), hostile())
	if strings.Contains(h.bells.String(), "\x1b]52") {
		t.Fatal("something reached the clipboard without a key press")
	}
	h.keys("c")
	if want := "\x1b]52;c;L3cvcC9zcmMvYXBwLnRz\x07"; !strings.Contains(h.bells.String(), want) {
		t.Fatalf("clipboard sequence %q lacks %q", h.bells.String(), want)
	}
	h.wantStatus("copied")
	h.keys("j", "c") // the hostile value: control characters arrive neutralized
	if strings.Count(h.bells.String(), "\x1b]52") != 2 || strings.Contains(h.bells.String(), "\x1b]52;c;bHMgG") {
		t.Fatalf("raw escape copied: %q", h.bells.String())
	}
}

// A click highlights the row under it (never decides); the wheel moves.
func TestMouseSelectsAndScrolls(t *testing.T) {
	h := newHarness(t)
	a, b, c := legacyBash(), pathWrite(), bashChain()
	h.queue(a, b, c)
	y := 3 + 2 + 2 // header, rule and column names, third row
	h.send(tea.MouseMsg{X: 10, Y: y, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if h.m.highlight != c.ID {
		t.Fatalf("click on line %d highlighted %v", y, h.m.highlight)
	}
	h.send(tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonWheelUp})
	if h.m.highlight != b.ID {
		t.Fatalf("wheel up went to %v", h.m.highlight)
	}
	h.wantDecisions()
}

func TestGoldenFiltered(t *testing.T) {
	screen(t, 80, 24, "/rev", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, legacyBash(), pathWrite(), bashChain())
		press(tm, "/", "r", "e", "v")
	})
}

func TestGoldenGrouped(t *testing.T) {
	r2 := pathWrite()
	r2.ID += 5
	screen(t, 80, 24, "reviewer · 2 asks", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, pathWrite(), bashChain(), r2)
		press(tm, "t")
	})
}

func TestGoldenMouseAndCopy(t *testing.T) {
	screen(t, 80, 24, "copied", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, legacyBash(), pathWrite(), bashChain())
		tm.Send(tea.MouseMsg{X: 10, Y: 7, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
		press(tm, "c")
	})
}

// The shown queue is cached between changes; every change must show at
// once: an arrival under a filter, a grouped arrival, an answer, a clear.
func TestShownQueueFollowsEveryChange(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a)
	h.keys("/")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("dep")})
	h.keys("enter")
	if got := len(h.m.shown()); got != 0 {
		t.Fatalf("filter shows %d asks, want none", got)
	}
	h.queue(b) // the deployer's ask arrives under the filter
	if shown := h.m.shown(); len(shown) != 1 || shown[0].ask.ID != b.ID {
		t.Fatalf("an arrival matching the filter is not shown: %d", len(shown))
	}
	h.keys("esc", "t")
	if lines := h.m.queueLines(); len(lines) != 4 {
		t.Fatalf("grouped: %d lines, want two headings and two asks", len(lines))
	}
	h.events(withdrawn(a.ID, true))
	h.keys("x")
	if shown := h.m.shown(); len(shown) != 1 || shown[0].ask.ID != b.ID {
		t.Fatalf("after x: %d shown", len(shown))
	}
}
