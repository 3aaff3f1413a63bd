package ui

import (
	"reflect"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// N denies for the session: the pattern is prefilled with the child's
// whole-session suggestion, the reason is required, the pattern is edited
// with tab and must still cover the ask, and the decision carries both.
func TestDenySessionDialog(t *testing.T) {
	h := newHarness(t)
	a, other := pathWrite(), externalRead()
	h.queue(a, other)
	h.keys("N")
	screen := ansi.Strip(h.m.View())
	for _, w := range []string{"deny for the session", "pattern: /w/p/src/*", "surface path_write; covers this ask", "p lists and revokes it"} {
		if !strings.Contains(screen, w) {
			t.Errorf("dialog lacks %q:\n%s", w, screen)
		}
	}
	h.keys("enter")
	h.wantStatus("type a reason first")
	h.keys("keep out of src")
	h.keys("tab", "ctrl+u", "/w/other/*")
	if screen := ansi.Strip(h.m.View()); !strings.Contains(screen, "does not cover this ask") {
		t.Fatalf("an edit that misses the ask:\n%s", screen)
	}
	h.keys("enter")
	h.wantStatus("the pattern does not cover this ask")
	h.wantDecisions()
	h.keys("ctrl+u", "/w/p/src/app.ts", "enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: "keep out of src",
		DenyFor: &wire.Grant{Surface: "path_write", Pattern: "/w/p/src/app.ts"}})
}

// A chain is covered by any of its units, as serve judges a deny; without a
// suggestion of one grant the pattern is the exact value.
func TestDenySessionCoversAChainUnit(t *testing.T) {
	h := newHarness(t)
	c := bashChain()
	h.queue(c)
	h.keys("N", "stop deploying", "tab", "ctrl+u", "eval *", "enter")
	h.wantDecisions(serve.Decision{Ask: c.ID, State: wire.StateDeniedWithReason, Reason: "stop deploying",
		DenyFor: &wire.Grant{Surface: "bash", Pattern: "eval *"}})
}

// Esc decides nothing; an ask without facts and a console over a hub get no
// session deny, and say why.
func TestDenySessionRefusals(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.keys("N", "esc")
	h.wantStatus("nothing decided")
	legacy := newHarness(t)
	legacy.queue(legacyBash())
	legacy.keys("N")
	legacy.wantStatus("carries no facts")
	hub := newHarness(t, func(o *Options) { o.OverHub = true })
	hub.queue(pathWrite())
	hub.keys("N")
	hub.wantStatus("not kept over a hub")
	for _, x := range []*harness{h, legacy, hub} {
		x.wantDecisions()
	}
}

// g lists session denies after the grants, with their reasons, and d
// revokes the highlighted one through RevokeDeny.
func TestGrantsPaneListsAndRevokesDenies(t *testing.T) {
	h := newHarness(t)
	g := wire.Grant{Surface: "bash", Pattern: "git status *"}
	d := serve.SessionDeny{Grant: wire.Grant{Surface: "bash", Pattern: "rm *"}, Reason: "no deleting"}
	h.events(serve.GrantsChanged{Grants: map[string][]wire.Grant{rootSession: {g}}},
		serve.DeniesChanged{Denies: map[string][]serve.SessionDeny{rootSession: {d}}})
	h.keys("p")
	screen := ansi.Strip(h.m.View())
	for _, w := range []string{"git status *", "session denies", "rm *", "no deleting"} {
		if !strings.Contains(screen, w) {
			t.Errorf("g lacks %q:\n%s", w, screen)
		}
	}
	h.keys("j", "d")
	if want := []revocation{{rootSession, d.Grant}}; !reflect.DeepEqual(h.backend.revokedDenies, want) || len(h.backend.revoked) != 0 {
		t.Fatalf("revoked denies %+v, grants %+v", h.backend.revokedDenies, h.backend.revoked)
	}
	h.wantStatus("revoked session deny bash rm *")
	h.wantDecisions()
}

func TestGoldenDenySession(t *testing.T) {
	screen(t, 80, 24, "keep out of src", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, pathWrite(), externalRead())
		press(tm, "N")
		tm.Type("keep out of src")
	})
}

// The log says that a person denied for the session, and by which pattern.
func TestDenySessionInTheLog(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	h.keys("N", "keep out", "enter")
	denied := wire.Response{State: wire.StateDeniedWithReason, DenialReason: "keep out", DecidedBy: wire.UserDecision()}
	h.events(serve.Decided{Ask: a, Response: denied})
	h.keys("l")
	screen := ansi.Strip(h.m.View())
	for _, w := range []string{"session deny path_write /w/p/src/* recorded", "reason: keep out"} {
		if !strings.Contains(screen, w) {
			t.Errorf("log lacks %q:\n%s", w, screen)
		}
	}
}

// The dialog's inputs follow the terminal's width when it opens and when
// it is resized, not when it is drawn (View changes no state).
func TestSessionDenyInputsFitTheWidthBeforeTheyAreDrawn(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.keys("N")
	want := func(width int) int { return width - len(h.m.denyDialog.reason.Prompt) - 4 }
	if got := h.m.denyDialog.reason.Width; got != want(80) {
		t.Fatalf("reason width %d at 80 columns, want %d", got, want(80))
	}
	h.send(tea.WindowSizeMsg{Width: 120, Height: 30})
	if r, p := h.m.denyDialog.reason.Width, h.m.denyDialog.pattern.Width; r != want(120) || p != want(120) {
		t.Fatalf("widths %d, %d after a resize to 120, want %d", r, p, want(120))
	}
}

// Adversarial pass 2, finding 16: a child's "* *" suggestion prefills N's
// pattern; the dialog names what it denies (every surface, every value, for
// every agent of the session) as the scope dialog names a grant's reach,
// and takes a second enter.
func TestADenyForEverySurfaceIsNamed(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := bashAsk(1, "tester", "/w/p", "make nn")
	a.Request.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "*", Pattern: "*"}}}
	a.Scopes = serve.OfferedScopes(a.Request, nil)
	h.queue(a)
	h.keys("N")
	screen := oneLine(h.m.View())
	for _, want := range []string{"every surface, not only this ask's bash", "every value"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the deny dialog lacks %q:\n%s", want, screen)
		}
	}
	h.keys("stop", "enter")
	h.wantDecisions()
	h.wantStatus("every surface")
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: "stop",
		DenyFor: &wire.Grant{Surface: "*", Pattern: "*"}})
}

// The second-enter warning names the deny's pattern as every other line
// names a grant (grantText): two spaces show as ␠, not as one space.
func TestADenyBeyondTheAskShowsItsPatternsBlanks(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := bashAsk(1, "tester", "/w/p", "make  nn")
	a.Request.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "*", Pattern: "make  *"}}}
	a.Scopes = serve.OfferedScopes(a.Request, nil)
	h.queue(a)
	h.keys("N", "stop", "enter")
	h.wantDecisions()
	h.wantStatus("(* make␠␠*: every surface")
}
