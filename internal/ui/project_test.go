package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/resolve"
)

// An ask from a cwd outside the project permtui judges with was judged
// without the project there: its row is marked ∉ and the detail's cwd line
// says so, where the ask showed only its cwd (adversarial finding F1,
// decision 0234). An ask from inside the project is not marked.
func TestAnAskFromOutsideTheProjectSaysSo(t *testing.T) {
	outside := bashAsk(1, "builder", "/w/b", "git push --force")
	outside.Verdict = resolve.Verdict{Action: resolve.Ask, Surface: "bash", OutsideProject: "/w/a",
		Explanation: `Allow. But a person decides: judged without the project at "/w/b", where the ask comes from.`}
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	h.queue(outside)
	v := oneLine(h.m.View())
	if !strings.Contains(v, "builder bash ∉ git push --force") {
		t.Errorf("the row is not marked:\n%s", v)
	}
	if !strings.Contains(v, "cwd /w/b ⚠ judged without the project at this cwd: permtui judges with the project /w/a") {
		t.Errorf("the detail's cwd line does not say it:\n%s", v)
	}

	inside := bashAsk(2, "builder", "/w/a/sub", "git status")
	inside.Verdict = resolve.Verdict{Action: resolve.Ask, Surface: "bash"}
	h = newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	h.queue(inside)
	if v := oneLine(h.m.View()); strings.Contains(v, "∉") || strings.Contains(v, "judged without") || !strings.Contains(v, "cwd /w/a/sub") {
		t.Errorf("an ask from inside the project is marked:\n%s", v)
	}
}

// An ask from a cwd with its own project below the one permtui judges with
// says which .pi it has and how to name it (decision 0257).
func TestAnAskFromAProjectBelowTheJudgedOneSaysWhich(t *testing.T) {
	nested := bashAsk(1, "builder", "/w/a/B/src", "git push --force")
	nested.Verdict = resolve.Verdict{Action: resolve.Ask, Surface: "bash", OutsideProject: "/w/a", OwnProject: "/w/a/B"}
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 160, Height: 40})
	h.queue(nested)
	v := oneLine(h.m.View())
	if !strings.Contains(v, "builder bash ∉ git push --force") {
		t.Errorf("the row is not marked:\n%s", v)
	}
	if want := "cwd /w/a/B/src ⚠ has its own project (/w/a/B/.pi) that permtui does not judge with: name it with --project /w/a/B and --session"; !strings.Contains(v, want) {
		t.Errorf("the detail's cwd line does not say %q:\n%s", want, v)
	}
}
