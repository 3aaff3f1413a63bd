package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// The scope dialog for each child version the spec names (wire-protocol
// §9.1, §13) shows exactly the scopes serve offers, with serve's words, and
// returns the chosen scope.
func TestScopeDialogForEveryChildVersion(t *testing.T) {
	v3 := legacyBash()
	v3.ID += 100
	v3.Request.Surface, v3.Request.Value, v3.Request.SessionApproval = nil, nil, nil
	v208 := pathWrite()
	v208.ID += 200
	v208.Request.Payload = nil
	v208.Request.SessionApproval.Legacy = true
	v40 := bashChain()
	v40.ID += 400
	v40.Request.AccessIntent.AskingUnits, v40.Request.AccessIntent.Floor = nil, nil
	v40.Request.SessionApproval.Grants = []wire.Grant{{Surface: "bash", Pattern: "nohup mytool *"}}
	for _, a := range []*serve.Ask{&v3, &v208, &v40} {
		a.Scopes = serve.OfferedScopes(a.Request)
	}

	cases := []struct {
		version string
		ask     serve.Ask
		want    []string // on screen, besides every option's title
		absent  []string
	}{
		{"3.x", v3, []string{"answered as approve once; nothing is recorded", "pi 3.x", "the whole session is not offered"},
			[]string{"the child records"}},
		{"20.7.3", legacyBash(), []string{"the child records:", "npm run build*", "this child sends none", "its own later asks still come here"},
			[]string{"both directions"}},
		{"20.8", v208, []string{"cannot read a grant width", "the whole session, both directions"},
			[]string{"this subagent, both directions", "this child sends none"}},
		{"newest", pathWrite(), []string{"this subagent, both directions", "children before pi 30.2 record only the direction asked for"},
			[]string{"this child sends none"}},
		{"40.x", v40, []string{"nohup mytool *"}, []string{"both directions", "pi 30.2"}},
	}
	for _, c := range cases {
		t.Run(c.version, func(t *testing.T) {
			opts := c.ask.Scopes.Options
			for i, o := range opts {
				h := newHarness(t)
				h.queue(c.ask)
				h.keys("s")
				screen := ansi.Strip(h.m.View())
				if i == 0 {
					for _, w := range append(c.want, titles(opts)...) {
						if !strings.Contains(screen, w) {
							t.Errorf("dialog lacks %q:\n%s", w, screen)
						}
					}
					for _, a := range c.absent {
						if strings.Contains(screen, a) {
							t.Errorf("dialog shows %q:\n%s", a, screen)
						}
					}
				}
				for range i {
					h.keys("j")
				}
				h.keys("enter")
				h.wantDecisions(serve.Decision{Ask: c.ask.ID, Scope: o.Kind})
			}
		})
	}
}

func titles(opts []serve.Scope) []string {
	var out []string
	for _, o := range opts {
		out = append(out, o.Title)
	}
	return out
}

// chooseScope opens s and marks the scope of that kind.
func chooseScope(h *harness, kind serve.ScopeKind) {
	h.t.Helper()
	h.keys("s")
	for range 4 {
		if h.m.scope.scopes.Options[h.m.scope.chosen].Kind == kind {
			return
		}
		h.keys("j")
	}
	h.t.Fatalf("no %s scope offered", kind)
}

// e narrows the whole-session pattern; the dialog says what it covers and
// refuses an edit that no longer covers the ask; enter sends the edit.
func TestScopeEditNarrowsTheGrant(t *testing.T) {
	h := newHarness(t)
	a, other := pathWrite(), pathWrite()
	other.ID += 3
	other.Request.AccessIntent.MatchValues = []string{"/w/p/src/lib.ts"}
	h.queue(a, other)
	chooseScope(h, serve.ScopeSession)
	if v := h.m.View(); !strings.Contains(v, "also answers 1 other waiting ask:") {
		t.Fatalf("coverage of the suggestion not shown:\n%s", v)
	}
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/w/other/*")})
	h.keys("enter")
	if v := h.m.View(); !strings.Contains(v, "⚠ does not cover this ask") {
		t.Fatalf("a pattern that misses the ask is not flagged:\n%s", v)
	}
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("does not cover this ask")
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/w/p/src/app.*")})
	h.keys("enter")
	if v := h.m.View(); !strings.Contains(v, "  /w/p/src/app.*") || !strings.Contains(v, "covers this ask (edited") {
		t.Fatalf("the edit is not shown with its coverage:\n%s", v)
	}
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession,
		Grants: []wire.Grant{{Surface: "path_write", Pattern: "/w/p/src/app.*"}}})
	h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: wire.UserDecision()}})
	h.keys("l")
	if v := h.m.View(); !strings.Contains(v, "permtui records path_write") || !strings.Contains(v, "         /w/p/src/app.*") {
		t.Fatalf("the log does not name the edited grant:\n%s", v)
	}
}

// An edit wider than the child's suggestion is a widening the person makes:
// the dialog names it beside the suggestion, and it takes a second enter,
// so a habit cannot turn "src/*" into "*" for every subagent; an edit inside
// the suggestion goes on one enter (TestScopeEditNarrowsTheGrant).
func TestScopeEditWiderThanTheSuggestionIsNamedAndConfirmed(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("*")})
	h.keys("enter")
	if v := ansi.Strip(h.m.View()); !strings.Contains(v, "⚠ wider than the child's suggestion /w/p/src/*") {
		t.Fatalf("the widening is not named:\n%s", v)
	}
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("enter again records it for the whole session")
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession,
		Grants: []wire.Grant{{Surface: "path_write", Pattern: "*"}}})
}

// What the dialog says of the pattern is about the pattern on screen: while
// it is typed, a wider one is named wider, and one typed back inside the
// suggestion is not, before enter (new-user finding: it spoke of the last
// confirmed edit).
func TestScopeEditCoverageFollowsWhatIsTyped(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	chooseScope(h, serve.ScopeSession)
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("*")})
	if v := ansi.Strip(h.m.View()); !strings.Contains(v, "⚠ wider than the child's suggestion /w/p/src/*") {
		t.Fatalf("a wider pattern being typed is not named:\n%s", v)
	}
	h.keys("enter", "e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/w/p/src/app.*")})
	if v := ansi.Strip(h.m.View()); strings.Contains(v, "wider than") || !strings.Contains(v, "covers this ask") {
		t.Fatalf("a narrower pattern being typed is still called wider:\n%s", v)
	}
}
