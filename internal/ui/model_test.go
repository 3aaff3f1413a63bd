package ui

import (
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// harness drives a Model with messages and runs every Cmd it returns,
// feeding Backend results back in, as the Bubble Tea runtime would.
type harness struct {
	t       *testing.T
	m       *Model
	backend *fakeBackend
	quit    bool
	bells   *testkit.SyncBuffer
	// now is the clock; keys advances it a second per key, a person's pace,
	// so the settle time after a change has passed by the next key.
	now time.Time
}

func newHarness(t *testing.T, tweak ...func(*Options)) *harness {
	t.Helper()
	b := &fakeBackend{}
	bells := &testkit.SyncBuffer{}
	h := &harness{t: t, backend: b, bells: bells, now: testNow}
	opts := Options{
		Backend:   b,
		Now:       func() time.Time { return h.now },
		Refresh:   -1,
		Attention: bells,
		ReadFile:  noFiles,
	}
	for _, f := range tweak {
		f(&opts)
	}
	h.m = New(opts)
	h.run(h.m.Init())
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	return h
}

// send delivers one message and runs the resulting commands to completion.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case tea.QuitMsg:
		h.quit = true
	case decidedMsg, revokedMsg, previewMsg, stampsMsg, rulePreviewMsg, ruleWrittenMsg:
		h.send(msg)
	}
}

func (h *harness) events(evs ...serve.Event) {
	for _, ev := range evs {
		h.send(EventMsg{Event: ev})
	}
}

func (h *harness) queue(asks ...serve.Ask) {
	for _, a := range asks {
		h.events(serve.AskQueued{Ask: a})
	}
}

// keys presses each key in turn; names like "esc", "enter", "space",
// "down" are special keys, anything else is typed as runes.
func (h *harness) keys(names ...string) {
	for _, n := range names {
		h.now = h.now.Add(time.Second)
		h.send(keyMsg(n))
	}
}

// press sends keys without advancing the clock: keys typed or repeated
// faster than the settle time.
func (h *harness) press(names ...string) {
	for _, n := range names {
		h.send(keyMsg(n))
	}
}

func keyMsg(name string) tea.KeyMsg {
	switch name {
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "ctrl+u":
		return tea.KeyMsg{Type: tea.KeyCtrlU}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(name)}
}

func (h *harness) decisions() []serve.Decision {
	h.backend.mu.Lock()
	defer h.backend.mu.Unlock()
	return append([]serve.Decision(nil), h.backend.decisions...)
}

func (h *harness) wantDecisions(want ...serve.Decision) {
	h.t.Helper()
	got := h.decisions()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		h.t.Fatalf("decisions:\n got %+v\nwant %+v", got, want)
	}
}

func (h *harness) wantStatus(sub string) {
	h.t.Helper()
	if !strings.Contains(h.m.status, sub) {
		h.t.Fatalf("status %q does not contain %q", h.m.status, sub)
	}
}

func (h *harness) queueKeys() []serve.AskID {
	var keys []serve.AskID
	for _, e := range h.m.queue {
		keys = append(keys, e.ask.ID)
	}
	return keys
}

func TestApproveOnce(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
	if len(h.m.queue) != 0 {
		t.Fatalf("answered ask still queued: %v", h.queueKeys())
	}
}

func TestDeny(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.keys("j", "n")
	h.wantDecisions(serve.Decision{Ask: b.ID, State: wire.StateDenied})
	if got := h.queueKeys(); !reflect.DeepEqual(got, []serve.AskID{a.ID}) {
		t.Fatalf("queue after deny = %v", got)
	}
}

func TestDenyWithReasonRequiresText(t *testing.T) {
	h := newHarness(t)
	a := bashChain()
	h.queue(a)
	h.keys("r", "enter")
	h.wantDecisions()
	h.wantStatus("type a reason first")
	if h.m.mode != modeReason {
		t.Fatalf("empty reason left the input (mode %d)", h.m.mode)
	}
	h.keys(" ", " ", "enter") // blanks only
	h.wantDecisions()
	h.keys("no force pushes", "enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: "no force pushes"})
	if h.m.mode != modeQueue {
		t.Fatalf("mode after submit = %d", h.m.mode)
	}
}

func TestSessionScopeChoices(t *testing.T) {
	cases := []struct {
		name   string
		ask    serve.Ask
		titles []string
		downs  int
		want   serve.Decision
	}{
		{"default is this subagent", pathWrite(),
			[]string{"this subagent only", "this subagent, both directions (read and write)", "the whole session", "the whole session, both directions (read and write)"},
			0, serve.Decision{Scope: serve.ScopeSubagent}},
		{"subagent both directions", pathWrite(), nil,
			1, serve.Decision{Scope: serve.ScopeSubagentBoth}},
		{"whole session", pathWrite(), nil,
			2, serve.Decision{Scope: serve.ScopeSession}},
		{"whole session both directions", externalRead(), nil,
			3, serve.Decision{Scope: serve.ScopeSessionBoth}},
		{"bash cannot widen", bashChain(),
			[]string{"this subagent only", "the whole session"},
			1, serve.Decision{Scope: serve.ScopeSession}},
		{"no suggestion: only this subagent", noSuggestion(),
			[]string{"this subagent only"},
			3, serve.Decision{Scope: serve.ScopeSubagent}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.queue(c.ask)
			h.keys("s")
			if h.m.mode != modeScope {
				t.Fatalf("s did not open the scope choice")
			}
			if c.titles != nil {
				var got []string
				for _, o := range h.m.scope.scopes.Options {
					got = append(got, o.Title)
				}
				if !reflect.DeepEqual(got, c.titles) {
					t.Fatalf("options = %q, want %q", got, c.titles)
				}
			}
			for range c.downs {
				h.keys("j")
			}
			h.wantDecisions()
			h.keys("enter")
			c.want.Ask = c.ask.ID
			h.wantDecisions(c.want)
		})
	}
}

func TestScopeWithoutSuggestionExplains(t *testing.T) {
	h := newHarness(t)
	h.queue(noSuggestion())
	h.keys("s")
	if !strings.Contains(h.m.View(), "the whole session is not offered") {
		t.Fatalf("scope view does not explain the missing whole-session option:\n%s", h.m.View())
	}
}

// The key that opened a page closes it; the other page's key does not.
func TestAPageClosesOnTheKeyThatOpenedIt(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	for _, c := range []struct {
		open, other string
		mode        mode
	}{{"v", "l", modeView}, {"l", "v", modeLog}} {
		h.keys(c.open, c.other)
		if h.m.mode != c.mode {
			t.Fatalf("%s then %s: mode %d, want %d", c.open, c.other, h.m.mode, c.mode)
		}
		h.keys(c.open)
		if h.m.mode != modeQueue {
			t.Fatalf("%s did not close what it opened: mode %d", c.open, h.m.mode)
		}
	}
	h.wantDecisions()
}

func TestEscNeverDecides(t *testing.T) {
	h := newHarness(t, withRules(&fakeRules{}))
	h.queue(pathWrite(), bashChain())
	for _, opener := range [][]string{{"s"}, {"s", "j", "j"}, {"r", "x"}, {"v"}, {"p"}, {"l"}, {"q"}, {"?"}, {"R"}} {
		h.keys(opener...)
		h.keys("esc")
		if h.m.mode != modeQueue {
			t.Fatalf("esc after %v left mode %d", opener, h.m.mode)
		}
	}
	h.keys("esc", "esc")
	h.wantDecisions()
	if h.quit {
		t.Fatal("esc quit the console")
	}
}

func TestMultiSelect(t *testing.T) {
	h := newHarness(t)
	a, b, c := pathWrite(), bashChain(), externalRead()
	h.queue(a, b, c)
	h.keys("space", "j", "j", "space", "y")
	h.wantDecisions(
		serve.Decision{Ask: a.ID, State: wire.StateApproved},
		serve.Decision{Ask: c.ID, State: wire.StateApproved},
	)
	if got := h.queueKeys(); !reflect.DeepEqual(got, []serve.AskID{b.ID}) {
		t.Fatalf("queue = %v", got)
	}
	// With nothing selected, n acts on the highlighted ask only.
	h.keys("n")
	h.wantDecisions(
		serve.Decision{Ask: a.ID, State: wire.StateApproved},
		serve.Decision{Ask: c.ID, State: wire.StateApproved},
		serve.Decision{Ask: b.ID, State: wire.StateDenied},
	)
}

func TestMultiSelectDeny(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.keys("space", "j", "space", "n")
	h.wantDecisions(
		serve.Decision{Ask: a.ID, State: wire.StateDenied},
		serve.Decision{Ask: b.ID, State: wire.StateDenied},
	)
}

func TestApproveIdentical(t *testing.T) {
	h := newHarness(t)
	a1, other := pathWrite(), externalRead()
	a2 := pathWrite()
	a2.ID++
	a2.Request.ID += "x"
	sameButOtherAgent := pathWrite()
	sameButOtherAgent.ID += 2
	sameButOtherAgent.Request.AccessIntent.Principal.AgentName = "builder"
	h.queue(a1, other, a2, sameButOtherAgent)
	h.keys("a")
	h.wantDecisions() // the first press shows how many and which
	h.wantStatus("press a again")
	if v := h.m.View(); strings.Count(v, "[≡]") != 2 {
		t.Fatalf("the asks a would approve are not marked:\n%s", v)
	}
	h.keys("a")
	h.wantDecisions(
		serve.Decision{Ask: a1.ID, State: wire.StateApproved},
		serve.Decision{Ask: a2.ID, State: wire.StateApproved},
	)
	if got := h.queueKeys(); !reflect.DeepEqual(got, []serve.AskID{other.ID, sameButOtherAgent.ID}) {
		t.Fatalf("queue = %v", got)
	}
}

func TestConfirmDouble(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ConfirmDouble = true })
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.keys("y")
	h.wantDecisions()
	h.wantStatus("press y again")
	h.keys("j", "y") // moving disarms; this is a first press again
	h.wantDecisions()
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: b.ID, State: wire.StateApproved})

	h.keys("r", "because", "enter")
	h.wantDecisions(serve.Decision{Ask: b.ID, State: wire.StateApproved})
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: b.ID, State: wire.StateApproved},
		serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: "because"})
}

func TestConfirmDoubleScope(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ConfirmDouble = true })
	a := pathWrite()
	h.queue(a)
	h.keys("s", "enter")
	h.wantDecisions()
	h.keys("j", "enter") // a different choice needs its own two presses
	h.wantDecisions()
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSubagentBoth})
}

func TestWithdrawnAskCannotBeAnswered(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	h.events(withdrawn(a.ID, true))
	h.keys("y", "n", "s", "a")
	h.wantDecisions()
	h.wantStatus("expired")
	if e := h.m.find(a.ID); e == nil || e.state != stateExpired {
		t.Fatalf("withdrawn ask should stay visible as expired, got %+v", e)
	}
	if h.m.expired != 1 || h.m.pendingCount() != 0 {
		t.Fatalf("expired=%d pending=%d", h.m.expired, h.m.pendingCount())
	}
	if !strings.Contains(h.m.View(), "expired") {
		t.Fatal("expired ask is not marked in words")
	}
	h.keys("x")
	if len(h.m.queue) != 0 {
		t.Fatal("x did not clear the expired ask")
	}
}

func TestDecideExpiredError(t *testing.T) {
	h := newHarness(t)
	h.backend.decideErr = errExpired
	a := bashChain()
	h.queue(a)
	h.keys("y")
	h.wantStatus("too late")
	if e := h.m.find(a.ID); e == nil || e.state != stateExpired {
		t.Fatalf("ask after expired error = %+v", e)
	}
	h.keys("y")
	if n := len(h.decisions()); n != 1 {
		t.Fatalf("late key press reached the backend: %d calls", n)
	}
}

func TestWithdrawnWhileAnswerIsWritten(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	h.now = h.now.Add(time.Second)
	_, check := h.m.Update(keyMsg("y")) // the write's file is checked first
	_, cmd := h.m.Update(check())       // the Decide call has not run yet
	h.events(withdrawn(a.ID, false))
	if e := h.m.find(a.ID); e == nil || e.state != stateSending {
		t.Fatalf("ask being answered was changed by Withdrawn: %+v", e)
	}
	h.run(cmd)
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
	if len(h.m.queue) != 0 || h.m.expired != 0 {
		t.Fatalf("queue=%v expired=%d", h.queueKeys(), h.m.expired)
	}
}

func TestDefaultExpiryRecognisesServeErrors(t *testing.T) {
	for _, err := range []error{serve.ErrExpired, serve.ErrUnknownAsk} {
		h := newHarness(t)
		h.backend.decideErr = err
		a := pathWrite()
		h.queue(a)
		h.keys("y")
		if e := h.m.find(a.ID); e == nil || e.state != stateExpired {
			t.Fatalf("%v: ask = %+v, want expired", err, e)
		}
	}
}

func TestDecideOtherErrorKeepsAskPending(t *testing.T) {
	h := newHarness(t)
	h.backend.decideErr = errors.New("disk full")
	a := bashChain()
	h.queue(a)
	h.keys("y")
	h.wantStatus("disk full")
	if e := h.m.find(a.ID); e == nil || e.state != statePending {
		t.Fatalf("ask after failed decide = %+v", e)
	}
}

func TestQuitConfirmation(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.keys("q")
	if h.quit || h.m.mode != modeQuit {
		t.Fatalf("q with a pending ask: quit=%v mode=%d", h.quit, h.m.mode)
	}
	h.keys("n")
	if h.quit || h.m.mode != modeQueue {
		t.Fatal("n did not stay")
	}
	h.keys("q", "D")
	if !h.quit || h.m.LeaveWaiting() {
		t.Fatalf("D: quit=%v leave=%v, want quit denying", h.quit, h.m.LeaveWaiting())
	}
	h.wantDecisions()

	leave := newHarness(t, func(o *Options) { o.CanLeave = true })
	leave.queue(pathWrite())
	leave.keys("q", "L")
	if !leave.quit || !leave.m.LeaveWaiting() {
		t.Fatalf("L: quit=%v leave=%v", leave.quit, leave.m.LeaveWaiting())
	}
	leave.wantDecisions()

	hub := newHarness(t) // a front end that cannot leave asks behind
	hub.queue(pathWrite())
	hub.keys("q", "L")
	if hub.quit || hub.m.LeaveWaiting() {
		t.Fatal("L quit where leaving is not possible")
	}

	empty := newHarness(t)
	empty.keys("q")
	if !empty.quit {
		t.Fatal("q with nothing pending should quit at once")
	}
}

// Backing out by habit (q to close, y to confirm) never decides asks: in the
// quit dialog q, y, n, enter and esc all stay, and only D or L quit.
func TestQuitNeverTakesAHabit(t *testing.T) {
	for _, habit := range [][]string{{"v", "q", "q", "y"}, {"q", "q"}, {"q", "enter"}, {"q", "y"}, {"q", "esc"}} {
		h := newHarness(t, func(o *Options) { o.CanLeave = true })
		h.queue(pathWrite(), bashChain())
		h.keys(habit...)
		if h.quit {
			t.Errorf("%v quit (denying every waiting ask)", habit)
		}
		if h.m.mode == modeQuit && habit[len(habit)-1] != "y" {
			t.Errorf("%v left the quit dialog open", habit)
		}
		h.wantDecisions()
	}
}

// ctrl+c twice leaves the waiting asks for the next server, as the README
// says, rather than denying them.
func TestCtrlCTwiceLeaves(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.CanLeave = true })
	h.queue(pathWrite())
	h.keys("ctrl+c")
	if h.quit || h.m.mode != modeQuit {
		t.Fatalf("first ctrl+c: quit=%v mode=%d", h.quit, h.m.mode)
	}
	h.keys("ctrl+c")
	if !h.quit || !h.m.LeaveWaiting() {
		t.Fatalf("second ctrl+c: quit=%v leave=%v, want quit leaving", h.quit, h.m.LeaveWaiting())
	}
	h.wantDecisions()
}

func TestGrantsPaneRevokes(t *testing.T) {
	h := newHarness(t)
	g1 := wire.Grant{Surface: "bash", Pattern: "git status *"}
	g2 := wire.Grant{Surface: "path_write", Pattern: "/w/p/src/*"}
	h.events(serve.GrantsChanged{Grants: map[string][]wire.Grant{rootSession: {g1, g2}}})
	h.keys("p", "j", "d")
	want := []revocation{{rootSession, g2}}
	if !reflect.DeepEqual(h.backend.revoked, want) {
		t.Fatalf("revoked %+v, want %+v", h.backend.revoked, want)
	}
	h.wantStatus("revoked whole-session grant path_write /w/p/src/*")
	h.wantDecisions()
}

func TestGrantApprovesQueuedAsks(t *testing.T) {
	h := newHarness(t)
	a, b, c := pathWrite(), bashChain(), externalRead()
	h.queue(a, b, c)
	h.keys("j", "j") // highlight c
	grant := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "path_write", Pattern: sp("/w/p/src/*"), Origin: sp("session")}
	approved := wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: grant}
	h.events(
		serve.GrantsChanged{Grants: map[string][]wire.Grant{rootSession: {{Surface: "path_write", Pattern: "/w/p/src/*"}}}},
		serve.Decided{Ask: a, Response: approved, Auto: true},
		serve.Decided{Ask: b, Response: approved, Auto: true},
	)
	h.wantStatus("2 queued asks answered by recorded authority (l names each): ✓ 2 approved")
	if got := h.queueKeys(); !reflect.DeepEqual(got, []serve.AskID{c.ID}) {
		t.Fatalf("queue = %v", got)
	}
	if h.m.auto.approved != 2 || len(h.m.log) != 2 {
		t.Fatalf("autoApproved=%d log=%d", h.m.auto.approved, len(h.m.log))
	}
	h.keys("l")
	if v := h.m.View(); !strings.Contains(v, "session grant path_write /w/p/src/*") {
		t.Fatalf("log does not name the grant:\n%s", v)
	}
}

func TestCursorShiftGuard(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	// a, the highlighted ask, is answered automatically; b slides under
	// the cursor. The next y must not approve b unseen.
	h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved}, Auto: true})
	h.keys("y")
	h.wantDecisions()
	h.wantStatus("changed under you")
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: b.ID, State: wire.StateApproved})
}

func TestOverlayClosesWhenItsAskGoes(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	h.keys("s")
	h.events(withdrawn(a.ID, true))
	if h.m.mode != modeQueue {
		t.Fatal("scope choice stayed open for an expired ask")
	}
	h.keys("enter") // would have confirmed; now opens the view
	h.wantDecisions()
}

func TestAttention(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Bell, o.Notify = true, true })
	h.queue(hostile(), pathWrite())
	out := h.bells.String()
	if strings.Count(out, "\a\x1b]9;") != 2 {
		t.Fatalf("want a bell and a notification per ask, got %q", out)
	}
	if !strings.Contains(out, "\x1b]9;permtui: 2 asks pending\x07") || !strings.Contains(out, "\x1b]777;notify;permtui;2 asks pending\x07") {
		t.Fatalf("notification text %q", out)
	}
	if strings.Contains(out, "rm -rf") || strings.Contains(out, "evil") {
		t.Fatalf("notification leaks request text: %q", out)
	}

	quiet := newHarness(t)
	quiet.queue(pathWrite())
	titles := regexp.MustCompile("\x1b]2;[^\a]*\a")
	if s := titles.ReplaceAllString(quiet.bells.String(), ""); s != "" {
		t.Fatalf("Bell=false Notify=false still wrote %q besides the title", s)
	}
}

func TestWindowTitleFollowsPendingCount(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	a := bashChain()
	h.queue(a)
	h.keys("j", "n")
	want := "\x1b]2;permtui: 0 asks pending\x07\x1b]2;permtui: 1 ask pending\x07" +
		"\x1b]2;permtui: 2 asks pending\x07\x1b]2;permtui: 1 ask pending\x07"
	if got := h.bells.String(); got != want {
		t.Fatalf("title writes %q, want %q", got, want)
	}
}

func TestHeaderShowsSessionsPolicyAndCounts(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40)) // tall enough for the full header
	h.events(
		serve.Serving{Serving: inbox.Serving{Session: rootSession}},
		serve.ServedElsewhere{ServedElsewhere: inbox.ServedElsewhere{Session: "other-root", PID: 4242}},
		serve.ServedElsewhere{ServedElsewhere: inbox.ServedElsewhere{Session: "third-root", PID: 4343, Permtui: true}},
		serve.PolicyStatus{Problems: []string{"project config /w/p/.pi/pi-permissions.jsonc: trailing comma at 3:5"}, NoAutoAllow: true},
		serve.Decided{Ask: bashChain(), Response: wire.Response{State: wire.StateDenied}, Auto: true},
		serve.Invalid{Invalid: inbox.Invalid{Session: rootSession, Path: "/fwd/x/requests/bad.json", Reason: "id is not a string"}},
	)
	v := h.m.View()
	for _, want := range []string{"serving ♥ " + rootSession, "⚠ pi (pid 4242) serves other-root; standing by", "⚠ another permtui (pid 4343) serves third-root; standing by",
		"policy ⚠ 1 problem, nothing auto-allowed (l: log): project config", "✗ 1 auto-denied", "⚠ 1 invalid"} {
		if !strings.Contains(v, want) {
			t.Errorf("header lacks %q:\n%s", want, v)
		}
	}
}

// The full help below 80 columns folds the three columns into two: every
// key of the wide help is listed there, once.
func TestNarrowHelpListsEveryKey(t *testing.T) {
	listed := func(width int) []string {
		var out []string
		for _, col := range DefaultKeyMap().queueHelp(width, true).full {
			for _, b := range col {
				out = append(out, b.Help().Key+" "+b.Help().Desc)
			}
		}
		slices.Sort(out)
		return out
	}
	if wide, narrow := listed(80), listed(79); !slices.Equal(wide, narrow) {
		t.Fatalf("narrow help %q, want the wide help's keys %q", narrow, wide)
	}
}

func TestLayoutFitsTheTerminal(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {60, 24}, {60, 12}, {120, 40}} {
		h := newHarness(t)
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		h.queue(legacyBash(), pathWrite(), bashChain(), externalRead(), hostile())
		for _, screen := range [][]string{nil, {"s"}, {"r"}, {"v"}, {"p"}, {"l"}, {"q"}, {"?"}} {
			h.keys(screen...)
			v := h.m.View()
			if len(screen) == 1 && screen[0] == "?" && size[1] >= 24 {
				for _, k := range []string{`q +quit`, `x +clear expired`, `r +deny with reason`, `p +grants`} {
					if !regexp.MustCompile(k).MatchString(v) {
						t.Errorf("%v: full help lacks %s:\n%s", size, k, v)
					}
				}
			}
			lines := strings.Split(v, "\n")
			if len(lines) != size[1] {
				t.Errorf("%v after %v: %d lines", size, screen, len(lines))
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%v after %v: line %d cells wide: %q", size, screen, w, l)
				}
			}
			h.keys("esc")
		}
	}
}

func TestAskWithoutRequestIsReported(t *testing.T) {
	h := newHarness(t)
	h.queue(serve.Ask{Arrived: inbox.Arrived{ID: 7, Session: rootSession}})
	h.wantStatus("ask #7 arrived without its request")
	if len(h.m.queue) != 0 || len(h.m.log) != 1 {
		t.Fatalf("queue=%d log=%d", len(h.m.queue), len(h.m.log))
	}
	_ = h.m.View()
}

// Bubble Tea delivers keys typed faster than it reads the terminal as one
// run of runes; each must still act, in order.
func TestKeysTypedTogetherActInTurn(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jn")})
	h.wantDecisions(serve.Decision{Ask: b.ID, State: wire.StateDenied})

	d := newHarness(t, func(o *Options) { o.ConfirmDouble = true })
	d.queue(a)
	d.now = d.now.Add(time.Second)
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("yy")})
	d.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
}

func TestPasteNeverDecides(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("yyy"), Paste: true})
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y"), Paste: true})
	h.wantDecisions()
	// A reason may be pasted.
	h.keys("r")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("see the main session"), Paste: true})
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: "see the main session"})
}

func TestHeaderShowsDegradedStateUntilRecovered(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40)) // tall enough for the full header
	h.events(serve.Degraded{Area: serve.AreaAudit, Problem: "audit: permission denied; answers wait"})
	if v := h.m.View(); !strings.Contains(v, "⚠ audit degraded: audit: permission denied") {
		t.Fatalf("header lacks the degraded audit log:\n%s", v)
	}
	h.events(serve.Degraded{Area: serve.AreaAudit})
	if v := h.m.View(); strings.Contains(v, "degraded") {
		t.Fatalf("recovered audit log still shown:\n%s", v)
	}
}

// An ask that came through a hub names its relay host beside the agent in
// the queue and on its own line in the detail.
func TestHubAskShowsItsHost(t *testing.T) {
	h := newHarness(t)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	a := pathWrite()
	a.Host = "alpha"
	h.queue(a)
	v := h.m.View()
	if !strings.Contains(v, "reviewer@alpha") || !regexp.MustCompile(`host +alpha`).MatchString(v) {
		t.Fatalf("host not shown:\n%s", v)
	}
}

// F8: at 80 columns a hub ask's row keeps its host whole and cuts the
// agent name first, from the right, so two hosts with a common prefix stay
// apart; a host too long for the column is shown alone, without the agent.
func TestAHubRowKeepsItsHostWhole(t *testing.T) {
	h := newHarness(t)
	h.queue(hubAsks()...)
	v := ansi.Strip(h.m.View())
	for _, want := range []string{"implemen…@prod-a bash", "implemen…@prod-b bash", "build-farm-west… bash", "scout@beta "} {
		if !strings.Contains(v, want) {
			t.Errorf("the queue lacks %q:\n%s", want, v)
		}
	}
}

// hubAsks are asks of four hosts, two of them with a common prefix and one
// too long for the agent column at 80 columns.
func hubAsks() []serve.Ask {
	onHost := func(n int, agent, host string) serve.Ask {
		a := bashAsk(n, agent, "/w/p", "npm test "+host)
		a.Host = host
		return a
	}
	return []serve.Ask{onHost(1, "implementer", "prod-a"), onHost(2, "implementer", "prod-b"),
		onHost(3, "a", "build-farm-west-7"), onHost(4, "scout", "beta")}
}

// Quitting a console attached to a hub denies nothing: the asks stay there.
func TestQuitOverHubSaysTheAsksStay(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	h.queue(pathWrite())
	if v := h.m.View(); !strings.Contains(v, "attached to the hub") || strings.Contains(v, "serving: none yet") {
		t.Fatalf("header over a hub:\n%s", v)
	}
	h.keys("q")
	if v := h.m.View(); !strings.Contains(v, "the hub keeps it for another console") || strings.Contains(v, "permtui exited") {
		t.Fatalf("quit dialog over a hub:\n%s", v)
	}
}

// The quit dialog's keys stay in its help line when the full help was open
// as it opened (? then q): it had no full help, so the line was empty.
// Two asks wait: the help names them "them".
func TestQuitHelpWithTheFullHelpOpen(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.CanLeave = true })
	h.queue(pathWrite())
	h.queue(bashAsk(1, "tester", "/w/p", "make"))
	h.keys("?", "q")
	if v := h.m.View(); !regexp.MustCompile(`D +deny them, quit`).MatchString(v) || !regexp.MustCompile(`L +leave them, quit`).MatchString(v) {
		t.Fatalf("the quit dialog's help lacks its keys:\n%s", v)
	}
}

// A click that moves the highlight off the selection warns as j does: y
// answers the selection, not the clicked ask. The click moved the highlight
// after the check, so it warned of the row it left.
func TestAClickOffTheSelectionWarns(t *testing.T) {
	h := newHarness(t)
	h.queue(legacyBash(), pathWrite())
	h.keys("space")
	y := 3 + 2 + 1 // header, rule and column names, second row
	h.send(tea.MouseMsg{X: 10, Y: y, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if h.m.highlight != pathWrite().ID {
		t.Fatalf("click on line %d highlighted %v", y, h.m.highlight)
	}
	h.wantStatus("not on the highlighted ask")
}

// When the console fell behind, the answers it was not sent one by one
// still count in the header (the automatic ones as automatic, a person's
// elsewhere not), and the log says why they are not listed.
func TestSkippedAnswersAreCountedAndExplained(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40)) // tall enough for the full header
	h.events(serve.Skipped{Arrived: 9, AutoApproved: 7, AutoDenied: 2, Approved: 1, Denied: 1, Expired: 4, Invalid: 3})
	v := h.m.View()
	if !strings.Contains(v, "7 auto-approved") || !strings.Contains(v, "2 auto-denied") || !strings.Contains(v, "4 expired") {
		t.Fatalf("header does not count the skipped answers:\n%s", v)
	}
	if l := h.m.log[len(h.m.log)-1].note; !strings.Contains(l, "11 answers, 4 expiries and 3 rejected files are counted but not listed") {
		t.Fatalf("log note %q", l)
	}
}

// A console that discovers sessions keeps each one it served while it runs
// (decision 0232), so past maxListedSessions the full header counts them
// rather than naming every id.
func TestHeaderCountsServedSessionsPastAFew(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40))
	ids := []string{"root-a", "root-b", "root-c"}
	for _, id := range ids {
		h.events(serve.Serving{Serving: inbox.Serving{Session: id}})
	}
	v := h.m.View()
	for _, id := range ids {
		if !strings.Contains(v, "serving ♥ "+id) {
			t.Fatalf("header lacks %s:\n%s", id, v)
		}
	}
	h.events(serve.Serving{Serving: inbox.Serving{Session: "root-d"}})
	v = h.m.View()
	if !strings.Contains(v, "serving ♥ 4 sessions") || strings.Contains(v, "serving ♥ root-a") {
		t.Fatalf("header names more than %d sessions:\n%s", maxListedSessions, v)
	}
}

// An answer that waits for its child to take a file already in responses/
// is no write fault: the log says what serve says of it, not "not written
// yet … (retrying)"; a fault still says that.
func TestAnUnreadAnswerIsNotCalledAWriteFault(t *testing.T) {
	h := newHarness(t)
	h.events(serve.WriteFailed{Ask: 7, Err: "write response: no space left on device"})
	if got := h.m.log[len(h.m.log)-1].note; got != "⚠ answer not written yet for ask #7: write response: no space left on device (retrying)" {
		t.Errorf("fault logged as %q", got)
	}
	h.events(serve.WriteFailed{Ask: 8, Err: "the answer recorded before this permtui started is already in responses/", Unread: true})
	if got := h.m.log[len(h.m.log)-1].note; got != "⚠ ask #8: the answer recorded before this permtui started is already in responses/" {
		t.Errorf("unread answer logged as %q", got)
	}
}

// hostilePaste is clipboard text that would drive or reorder the terminal:
// escape sequences, C0 and C1 controls, a bidi override, a zero-width space.
const hostilePaste = "\x1b]0;pwned\x07\x1b[2Jstop\u202e\u0085\u009b31m\u200bnow\x00"

// wantDrawnSafe fails when the view holds a raw ESC, another C0 control
// than a newline, or a C1 or format rune outside the console's own styling.
func wantDrawnSafe(t *testing.T, view string) {
	t.Helper()
	plain := view
	if i := strings.IndexFunc(plain, func(r rune) bool { return (r < 0x20 && r != '\n') || r == 0x7f || termsafe.Hidden(r) }); i >= 0 {
		t.Fatalf("view holds %q at %d:\n%q", plain[i:min(i+8, len(plain))], i, plain)
	}
}

// Text pasted into the reason dialog and into both inputs of the session
// deny dialog is shown as the rule dialog shows it (termsafe.Neutralize),
// and the reason sent is what was shown.
func TestPastedTextInTheDenyDialogsIsShownSafe(t *testing.T) {
	h := newHarness(t)
	a := pathWrite()
	h.queue(a)
	h.keys("r")
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(hostilePaste), Paste: true})
	wantDrawnSafe(t, h.m.View())
	h.keys("enter")
	shown := "]0;pwned[2Jstop⟨U+202E⟩31m⟨U+200B⟩now" // the input drops C0 and C1 controls itself
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: shown})

	d := newHarness(t)
	d.queue(a)
	d.keys("N")
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(hostilePaste), Paste: true})
	wantDrawnSafe(t, d.m.View())
	d.keys("tab")
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("\u202e"), Paste: true})
	wantDrawnSafe(t, d.m.View())
	if got := d.m.denyDialog.deny().Pattern; got != "/w/p/src/*⟨U+202E⟩" {
		t.Errorf("deny pattern %q, want the override shown", got)
	}
}

// The quit prompt and the refusal y gets there agree: the prompt says what
// y does, and the refusal names the same keys to stay as the prompt does.
func TestQuitPromptAndTheRefusalOfYAgree(t *testing.T) {
	for _, canLeave := range []bool{false, true} {
		h := newHarness(t, func(o *Options) { o.CanLeave = canLeave })
		h.queue(pathWrite())
		h.keys("q")
		view := ansi.Strip(h.m.View())
		h.keys("y")
		h.wantStatus("y does not quit here")
		if !strings.Contains(view, "y does not quit here") {
			t.Errorf("canLeave %v: the prompt does not say what y does:\n%s", canLeave, view)
		}
		stay := h.m.status[strings.LastIndex(h.m.status, "; ")+2:]
		if !strings.Contains(view, stay) {
			t.Errorf("canLeave %v: the refusal says %q, the prompt does not:\n%s", canLeave, stay, view)
		}
	}
}

// The refusal of y and the help line name the waiting asks as the prompt
// does: one ask is "it", as in "D: deny it", not "them".
func TestTheRefusalOfYNamesOneAskAsIt(t *testing.T) {
	for _, canLeave := range []bool{false, true} {
		h := newHarness(t, func(o *Options) { o.CanLeave = canLeave })
		h.queue(pathWrite())
		h.keys("q")
		if view := ansi.Strip(h.m.View()); !strings.Contains(view, "D deny it, quit") ||
			canLeave && !strings.Contains(view, "L leave it, quit") || strings.Contains(view, "them, quit") {
			t.Errorf("canLeave %v: the help line does not name one ask as it:\n%s", canLeave, view)
		}
		h.keys("y")
		h.wantStatus("D denies it and quits")
		if strings.Contains(h.m.status, "them") {
			t.Errorf("canLeave %v: the refusal names one ask as them: %q", canLeave, h.m.status)
		}
	}
}
