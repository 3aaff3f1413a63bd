package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// piChain is what the newest pi child sends for a chain (wire-protocol
// §10.3): the display value names only the winning unit; the dangerous one
// is in askingUnits and the "full command" evidence.
func piChain() serve.Ask {
	a := bashChain()
	r := a.Request
	r.Value = sp("pnpm test")
	r.Payload.Request.Value = "pnpm test"
	r.Payload.Evidence = []wire.Evidence{{Label: "full command", Text: "pnpm test && sudo rm -rf /tmp/build"}}
	r.AccessIntent.MatchValues = []string{"pnpm test"}
	r.AccessIntent.AskingUnits = []wire.AskingUnit{
		{Command: "pnpm test"},
		{Command: "sudo rm -rf /tmp/build", Floor: sp("<indirection-bash-wrapper>")},
	}
	a.Verdict.Unit = "sudo rm -rf /tmp/build"
	return a
}

// deepWrite writes in another worktree; pi displays the path relative to
// the child's cwd, which hides the worktree.
func deepWrite() serve.Ask {
	a := pathWrite()
	a.ID++
	abs := "/home/ana/work/app-wt-7/packages/server/internal/handlers/notes/plan.md"
	r := a.Request
	r.Value = sp("packages/server/internal/handlers/notes/plan.md")
	r.AccessIntent.RequesterCwd = "/home/ana/work/app-wt-7"
	r.AccessIntent.MatchValues = []string{abs, *r.Value}
	r.AccessIntent.BoundaryValue = sp(abs)
	return a
}

func rowOf(t *testing.T, view, agent string) string {
	t.Helper()
	for _, l := range strings.Split(view, "\n") {
		if strings.Contains(l, "[ ] "+agent) || strings.Contains(l, "[•] "+agent) {
			return l
		}
	}
	t.Fatalf("no queue row for %s:\n%s", agent, view)
	return ""
}

func TestQueueRowShowsTheWholeChainAndMarksFloors(t *testing.T) {
	h := newHarness(t)
	h.queue(piChain())
	row := rowOf(t, h.m.View(), "deployer")
	if !strings.Contains(row, "⚠ pnpm test && sudo rm") {
		t.Fatalf("row hides the floored unit: %q", row)
	}
	if v := h.m.View(); !strings.Contains(v, "command   pnpm test && sudo rm -rf /tmp/build") ||
		!strings.Contains(v, "unit 2    sudo rm -rf /tmp/build  ⚠ floor") {
		t.Fatalf("detail does not show the chain and its floored unit:\n%s", v)
	}
}

func TestQueueRowShowsTheAbsolutePathEnd(t *testing.T) {
	for _, width := range []int{60, 80, 120} {
		h := newHarness(t)
		h.send(tea.WindowSizeMsg{Width: width, Height: 24})
		h.queue(deepWrite())
		row := rowOf(t, h.m.View(), "reviewer")
		if !strings.Contains(row, "notes/plan.md") || !strings.Contains(row, "…") && !strings.Contains(row, "app-wt-7") {
			t.Fatalf("%d columns: row does not end in the file or loses the worktree: %q", width, row)
		}
		if strings.Contains(row, " packages/") {
			t.Fatalf("%d columns: row shows the relative display value: %q", width, row)
		}
	}
}

func TestDetailShowsLongValuesWhole(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 60, Height: 24})
	h.queue(deepWrite())
	v := h.m.View()
	flat := strings.ReplaceAll(v, "\n          ", "")
	if !strings.Contains(flat, "/home/ana/work/app-wt-7/packages/server/internal/handlers/notes/plan.md") {
		t.Fatalf("the boundary path is cut in the detail:\n%s", v)
	}
}

func TestColumnsFitNamesWhenThereIsRoom(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 120, Height: 30})
	a := externalRead()
	a.Request.RequesterAgentName = "implementer"
	a.Request.AccessIntent.Principal.AgentName = "implementer"
	h.queue(a)
	row := rowOf(t, h.m.View(), "implementer")
	if !strings.Contains(row, "implementer external_directory_read") {
		t.Fatalf("agent or surface cut at 120 columns: %q", row)
	}
}

func TestSelectionCountIsShown(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite(), bashChain(), externalRead())
	h.keys("space", "j", "space")
	if v := h.m.View(); !strings.Contains(v, "2 selected") || !strings.Contains(v, "y approves 2 selected:") {
		t.Fatalf("selection count missing:\n%s", v)
	}
}

func TestHighlightThatMovedIsMarked(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved}, Auto: true})
	if v := h.m.View(); !strings.Contains(v, "⚠ new ask under the highlight") {
		t.Fatalf("no sign that the highlight moved:\n%s", v)
	}
	h.keys("j")
	if v := h.m.View(); strings.Contains(v, "new ask under the highlight") {
		t.Fatalf("the mark outlived the next key:\n%s", v)
	}
}

func TestStatusFades(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.keys("y")
	if !strings.Contains(h.m.View(), "» approve once") {
		t.Fatal("no status after a decision")
	}
	h.now = h.now.Add(statusTTL + time.Second)
	if strings.Contains(h.m.View(), "» approve once") {
		t.Fatal("the status outlived its time")
	}
}

func TestLogNamesTheChosenScopeAndRevocations(t *testing.T) {
	h := newHarness(t)
	a := externalRead()
	h.queue(a)
	h.keys("s", "j", "j", "j", "enter")
	d := h.decisions()
	if len(d) != 1 || d[0].Scope != serve.ScopeSessionBoth {
		t.Fatalf("decisions %+v", d)
	}
	h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: wire.UserDecision()}})
	g := wire.Grant{Surface: "external_directory", Pattern: "/w/other/*"}
	h.events(serve.GrantsChanged{Grants: map[string][]wire.Grant{rootSession: {g}}})
	h.keys("p", "d", "esc", "l")
	v := h.m.View()
	for _, want := range []string{
		"by you · for the whole session, both directions (read and write); permtui records",
		"revoked whole-session grant external_directory /w/other/*",
	} {
		if !strings.Contains(strings.Join(strings.Fields(v), " "), want) {
			t.Errorf("log lacks %q:\n%s", want, v)
		}
	}
}

func TestShortHelpFitsSixtyColumns(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 60, Height: 24})
	lines := strings.Split(h.m.View(), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"y approve once", "n deny", "r reason", "s session", "? help"} {
		if !strings.Contains(last, want) {
			t.Errorf("help line %q lacks %q", last, want)
		}
	}
}

func TestQuitWordingFollowsCount(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.keys("q")
	if v := h.m.View(); !strings.Contains(v, "deny it as") {
		t.Fatalf("singular quit text wrong:\n%s", v)
	}
}

func TestFullViewSaysWhereItIs(t *testing.T) {
	h := newHarness(t)
	h.queue(bashChain())
	h.keys("v")
	if v := h.m.View(); !strings.Contains(v, "full view · lines 1–") {
		t.Fatalf("no position in a full view longer than the screen:\n%s", v)
	}
	h.keys("j")
	if v := h.m.View(); !strings.Contains(v, "full view · lines 2–") {
		t.Fatalf("position does not follow scrolling:\n%s", v)
	}
}

func TestClearExpiredKeepsThePlace(t *testing.T) {
	h := newHarness(t)
	a, b, c := pathWrite(), bashChain(), externalRead()
	h.queue(a, b, c)
	h.keys("j")
	h.events(withdrawn(b.ID, true))
	h.keys("x")
	if h.m.highlight != c.ID {
		t.Fatalf("after x the highlight is on %d, want the next ask %d", h.m.highlight, c.ID)
	}
}

func TestReasonForSeveralListsThem(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite(), legacyBash(), externalRead())
	h.keys("space", "j", "space", "r")
	v := h.m.View()
	for _, want := range []string{"  reviewer · path_write · /w/p/src/app.ts", "  builder · bash · npm run build"} {
		if !strings.Contains(v, want) {
			t.Errorf("reason dialog does not list %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "/w/other/README.md") {
		t.Errorf("reason dialog lists an ask that is not selected:\n%s", v)
	}
}

func TestLogNamesPathsAbsolutely(t *testing.T) {
	h := newHarness(t)
	a := deepWrite()
	h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved}, Auto: true})
	h.keys("l")
	if v := strings.Join(strings.Fields(h.m.View()), " "); !strings.Contains(v, "reviewer · path_write · /home/ana/work/app-wt-7/") {
		t.Fatalf("log shows the relative display path:\n%s", h.m.View())
	}
}

func TestWrapWordsKeepsHyphenatedWordsWhole(t *testing.T) {
	got := wrapWords("by rule /w/app-wt-7/notes and rm -rf x", 14)
	want := []string{"by rule", "/w/app-wt-7/no", "tes and rm -rf", "x"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("wrapWords = %q, want %q", got, want)
	}
}

// 40.0.0's matchedSpelling shows under the matched pattern, neutralized
// like every other request string.
func TestDetailShowsMatchedSpelling(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 80, Height: 40})
	a := bashChain()
	a.Request.Payload.Request.MatchedPattern = sp("git push *")
	a.Request.Payload.Request.MatchedSpelling = sp("git push --force origin main\x1b[2J")
	h.queue(a)
	h.keys("v")
	v := h.m.View()
	lines := strings.Split(v, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	if !strings.Contains(strings.Join(lines, "\n"), "matched   git push *\n          as git push --force origin main␛[2J") {
		t.Fatalf("no \"matched … as …\" in the detail:\n%s", v)
	}
	if strings.Contains(v, "\x1b[2J") {
		t.Fatal("the spelling's control sequence reached the screen")
	}
}

// A legacy ask shows what the policy would say about its text, marked as an
// unverified hint that decides nothing.
func TestDetailShowsTheLegacyHint(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := legacyBash()
	a.Verdict.Hint = &resolve.Verdict{Action: resolve.Allow, Explanation: "Allow. The last rule matching \"npm run build\" on bash is the rule bash \"npm *\" → allow\x1b[2J."}
	h.queue(a)
	h.keys("v")
	v := strings.Join(strings.Fields(h.m.View()), " ")
	if !strings.Contains(v, "hint ⚠ unverified: from the child's legacy surface and value, not facts; it decides nothing. On that text the root's policy would say: Allow.") {
		t.Fatalf("no hint in the detail:\n%s", h.m.View())
	}
	if strings.Contains(h.m.View(), "\x1b[2J") {
		t.Fatal("the hint's control sequence reached the screen")
	}
}
