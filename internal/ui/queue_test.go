package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// After a decision moves the highlight, y waits the settle time; pressing
// it meanwhile (a held or repeated key) restarts the wait, so it never
// answers the next ask.
func TestSettleAfterTheHighlightMoves(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
	for range 5 { // auto-repeat: a press every 100 ms
		h.now = h.now.Add(100 * time.Millisecond)
		h.press("y")
	}
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
	h.wantStatus("ignored for 400ms")
	h.press("v", "esc") // another key: the ignored key is no longer the point
	if h.m.status != "" {
		t.Fatalf("settle status outlived the next key: %q", h.m.status)
	}
	h.now = h.now.Add(DefaultSettle)
	h.press("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved}, serve.Decision{Ask: b.ID, State: wire.StateApproved})
}

// A new ask appearing under a person about to type must not be answered
// by the key they were already pressing.
func TestSettleAfterAnArrival(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.press("n")
	h.wantDecisions()
	h.wantStatus("just changed")
}

// Moving the highlight oneself ends the wait: what is shown was chosen.
func TestMovingEndsTheSettle(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.press("j", "y")
	h.wantDecisions(serve.Decision{Ask: b.ID, State: wire.StateApproved})
}

func TestSettleCanBeTurnedOff(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Settle = -1 })
	a := pathWrite()
	h.queue(a)
	h.press("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
}

// The highlighted row is one reverse-video bar across the whole width,
// written even with colour off (the goldens run under the ASCII profile).
func TestHighlightIsAFullWidthReverseBar(t *testing.T) {
	for _, width := range []int{60, 80} {
		h := newHarness(t)
		h.send(sizeMsg(width, 24))
		h.queue(pathWrite(), bashChain())
		var bars []string
		for _, l := range strings.Split(h.m.View(), "\n") {
			if strings.Contains(l, "\x1b[7m") {
				bars = append(bars, l)
			}
		}
		if len(bars) != 1 || !strings.Contains(bars[0], "reviewer") {
			t.Fatalf("%d columns: want one bar on the highlighted row, got %q", width, bars)
		}
		if w := ansi.StringWidth(bars[0]); w != width {
			t.Fatalf("%d columns: bar is %d cells wide", width, w)
		}
	}
}

func TestDetailSaysIdenticalAsksWait(t *testing.T) {
	h := newHarness(t)
	a, b := pathWrite(), pathWrite()
	b.ID++
	h.queue(a, b)
	if v := h.m.View(); !strings.Contains(v, "1 more identical ask waits; a approves all 2") {
		t.Fatalf("detail does not say an identical ask waits:\n%s", v)
	}
}

// Bug 3: esc closes the expanded help, which lists esc, enter, ctrl+c, d.
func TestEscClosesHelpAndHelpListsEveryKey(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.keys("?")
	v := h.m.View()
	for _, want := range []string{"esc", "v/enter", "ctrl+c", "revoke (in p)", "g/home", "G/end"} {
		if !strings.Contains(v, want) {
			t.Errorf("expanded help lacks %q:\n%s", want, v)
		}
	}
	h.keys("esc")
	if h.m.help.ShowAll {
		t.Fatal("esc did not close the expanded help")
	}
	h.wantDecisions()
}

// Bug 4: a status about a press or an ask goes when it no longer holds.
func TestStaleStatusIsCleared(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ConfirmDouble = true })
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.keys("y")
	h.wantStatus("press y again")
	h.keys("j")
	if h.m.status != "" {
		t.Fatalf("status after moving away: %q", h.m.status)
	}
	h.events(withdrawn(b.ID, true))
	h.wantStatus("expired:")
	h.keys("x")
	if h.m.status != "" {
		t.Fatalf("status after clearing the expired ask: %q", h.m.status)
	}
}

// Bug 2: without a boundaryValue (every 20.7.3 child) a path is still cut
// from the left, so the file name stays.
func TestRowWithoutBoundaryKeepsTheFileName(t *testing.T) {
	a := pathWrite()
	r := a.Request
	r.AccessIntent = nil
	r.Value = sp("/tmp/p/src/components/very/deep/directory/structure/of/the/project/Button.tsx")
	h := newHarness(t)
	h.queue(a)
	row := rowOf(t, h.m.View(), "reviewer")
	if !strings.Contains(row, "…") || !strings.Contains(row, "Button.tsx") {
		t.Fatalf("row loses the file name: %q", row)
	}
}

func sizeMsg(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// Bug 5: with no policy file the header says so and where serve looked,
// never "policy ✓ loaded".
func TestHeaderSaysNoPolicyFileWasFound(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40)) // tall enough for the full header
	h.events(serve.PolicyStatus{NoFile: `no policy file found, so every ask goes to a person; looked in "/home/ana/.pi/agnet/settings.json"`})
	v := h.m.View()
	if strings.Contains(v, "policy ✓") || !strings.Contains(v, "no policy file found") || !strings.Contains(v, "agnet/settings.json") {
		t.Fatalf("header hides the missing policy:\n%s", v)
	}
}

// The header says whether a project policy is in force and whether its
// allows are held for a person (decision 0206), at full height and at
// 80x24, where the policy line takes its short form.
func TestHeaderSaysWhetherTheProjectPolicyIsHeld(t *testing.T) {
	project := []string{"/w/p/.pi/extensions/pi-permission-system/config.json"}
	for _, c := range []struct {
		st   serve.PolicyStatus
		want string
	}{
		{serve.PolicyStatus{}, "policy ✓ loaded"},
		{serve.PolicyStatus{ProjectFiles: project, ProjectAllowsHeld: true}, "project allows held"},
		{serve.PolicyStatus{ProjectFiles: project}, "project trusted"},
		{serve.PolicyStatus{Problems: []string{"x: broken"}, NoAutoAllow: true, ProjectFiles: project, ProjectAllowsHeld: true}, "project allows held"},
	} {
		for _, size := range []tea.WindowSizeMsg{sizeMsg(100, 40), sizeMsg(80, 24)} {
			h := newHarness(t)
			h.send(size)
			h.events(c.st)
			v := h.m.View()
			if !strings.Contains(v, c.want) || c.st.ProjectFiles == nil && strings.Contains(v, "project") {
				t.Errorf("%+v at %dx%d: header lacks %q:\n%s", c.st, size.Width, size.Height, c.want, v)
			}
		}
	}
	h := newHarness(t)
	h.events(serve.PolicyStatus{ProjectFiles: project, ProjectAllowsHeld: true})
	if len(h.m.log) == 0 {
		t.Fatal("nothing logged of the held project")
	}
	if n := h.m.log[len(h.m.log)-1].note; !strings.Contains(n, project[0]) || !strings.Contains(n, "--trust-project") {
		t.Errorf("the log does not name the held project's file and the flag: %q", n)
	}
}

// The activity line shows the latest automatic answer (what, for whom, by
// which rule) and counts per agent.
func TestActivityLineShowsAutomaticAnswers(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40)) // tall enough for the full header
	if strings.Contains(h.m.View(), "last auto") {
		t.Fatal("activity line before any automatic answer")
	}
	rule := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp("git push *"), Origin: sp("global")}
	grant := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "path_write", Pattern: sp("/w/p/src/*"), Origin: sp("session")}
	h.events(
		serve.Decided{Ask: bashChain(), Response: wire.Response{State: wire.StateDenied, DecidedBy: rule}, Auto: true},
		serve.Decided{Ask: pathWrite(), Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: grant}, Auto: true},
		serve.Decided{Ask: pathWrite(), Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: grant}, Auto: true},
	)
	v := h.m.View()
	for _, want := range []string{
		"last auto, 0s ago: ✓ approved reviewer by session grant path_write /w/p/src/* ·",
		"auto by agent: deployer ✗1 · reviewer ✓2",
	} {
		if !strings.Contains(v, want) {
			t.Fatalf("activity lacks %q:\n%s", want, v)
		}
	}
}

// After a restart the log shows earlier runs' decisions from the audit log.
func TestLogShowsHistoryFromTheAuditLog(t *testing.T) {
	h := newHarness(t)
	h.events(serve.History{Records: []serve.AuditRecord{
		{Agent: "impl", Surface: "bash", MatchValues: []string{"make test"}, State: wire.StateApprovedForServingSession, Approved: true,
			Grants: []wire.Grant{{Surface: "bash", Pattern: "make test *"}}, DecidedAt: testNow.Add(-time.Hour).UnixMilli()},
		{Agent: "impl\x1b[2J", Surface: "bash", MatchValues: []string{"rm -rf /"}, State: wire.StateDenied, Auto: true,
			DecidedBy: &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp("rm *"), Origin: sp("global")}},
		// s19 F4: what a "this subagent" approval let the child record.
		{Agent: "impl", Surface: "bash", MatchValues: []string{"npm test"}, State: wire.StateApprovedForSession, Approved: true,
			ChildGrants: []wire.Grant{{Surface: "bash", Pattern: "npm test *"}, {Surface: "bash", Pattern: "*"}}},
	}})
	h.keys("l")
	v := h.m.View()
	for _, want := range []string{"17:00:00 ✓ approved  impl · bash · make test", "recorded for the whole session bash make test *",
		"✗ denied  impl␛[2J · bash · rm -rf /", "by rule (global) bash: rm *", "for this subagent; the child records bash npm test *, bash *",
		"↑ 3 entries of earlier runs, from the audit log"} {
		if !strings.Contains(v, want) {
			t.Fatalf("log lacks %q:\n%s", want, v)
		}
	}
}

// An earlier run's decision is named by the agent its facts name (the
// principal the policy was scoped to), as the console named the ask live
// (wire.Request.Agent), not by the requester name the child also sent.
func TestHistoryNamesTheAgentTheConsoleShowed(t *testing.T) {
	h := newHarness(t)
	h.events(serve.History{Records: []serve.AuditRecord{
		{Agent: "builder", Surface: "bash", MatchValues: []string{"make test"}, State: wire.StateDenied,
			Facts: &serve.AuditFacts{Principal: "scout", Surface: "bash", MatchValues: []string{"make test"}}, DecidedAt: testNow.Add(-time.Hour).UnixMilli()},
	}})
	h.keys("l")
	if v := h.m.View(); !strings.Contains(v, "scout · bash · make test") || strings.Contains(v, "builder") {
		t.Fatalf("log names another agent than scout:\n%s", v)
	}
}

// Expiries are in the log: live ones as they happen, earlier runs' from the
// audit log after a restart.
func TestLogShowsExpiries(t *testing.T) {
	h := newHarness(t)
	h.events(serve.History{Records: []serve.AuditRecord{
		{Kind: serve.AuditExpired, Agent: "impl", Surface: "bash", MatchValues: []string{"make lint"}, DecidedAt: testNow.Add(-time.Hour).UnixMilli()},
	}})
	a := legacyBash()
	h.queue(a)
	h.events(withdrawn(a.ID, true))
	h.keys("l")
	v := h.m.View()
	for _, want := range []string{"17:00:00 ⌛ expired  impl · bash · make lint (the child stopped waiting)", "↑ 1 entry of earlier runs",
		"⌛ expired  " + askLabel(a) + " (the child stopped waiting)"} {
		if !strings.Contains(v, want) {
			t.Fatalf("log lacks %q:\n%s", want, v)
		}
	}
}

// F14: whole-session grants and session denies in force (restored at start
// or recorded since) widen or narrow what the policy decides and outlive the
// run, so the header says how many, beside the policy state, wherever that
// state is (loaded, a problem, no file, over a hub), and says nothing once
// they are revoked.
func TestHeaderSaysWhatSessionAuthorityIsInForce(t *testing.T) {
	grants := serve.GrantsChanged{Grants: map[string][]wire.Grant{
		rootSession:  {{Surface: "bash", Pattern: "npm *"}, {Surface: "path_write", Pattern: "/w/p/*"}},
		"other-root": {{Surface: "bash", Pattern: "git status *"}},
	}}
	denies := serve.DeniesChanged{Denies: map[string][]serve.SessionDeny{
		rootSession: {{Grant: wire.Grant{Surface: "bash", Pattern: "rm *"}, Reason: "no deleting"}},
	}}
	for _, c := range []struct {
		name  string
		st    serve.Event
		tweak func(*Options)
	}{
		{"loaded", serve.PolicyStatus{}, nil},
		{"problem", serve.PolicyStatus{Problems: []string{"x: broken"}, NoAutoAllow: true}, nil},
		{"no file", serve.PolicyStatus{NoFile: "no policy file found"}, nil},
		{"hub", nil, func(o *Options) { o.OverHub = true }},
	} {
		for _, size := range []tea.WindowSizeMsg{sizeMsg(100, 40), sizeMsg(80, 24)} {
			var tweaks []func(*Options)
			if c.tweak != nil {
				tweaks = append(tweaks, c.tweak)
			}
			h := newHarness(t, tweaks...)
			h.send(size)
			if c.st != nil {
				h.events(c.st)
			}
			h.events(serve.Serving{Serving: inbox.Serving{Session: rootSession}}, grants, denies)
			// At 24 rows the short form may be the one that fits. A local
			// console counts only the sessions it serves: other-root's grant
			// is not in force here (third adversarial pass, finding 7); a hub
			// console, every relay's.
			long, short := "2 whole-session grants in force, 1 session deny (p)", "2 session grants, 1 deny (p)"
			if c.name == "hub" {
				long, short = "3 whole-session grants in force, 1 session deny (p)", "3 session grants, 1 deny (p)"
			}
			if header := oneLine(strings.Join(h.m.headerLines(), "\n")); !strings.Contains(header, long) &&
				(size.Height > 24 || !strings.Contains(header, short)) {
				t.Errorf("%s at %dx%d: header lacks %q:\n%s", c.name, size.Width, size.Height, long, header)
			}
			h.events(serve.GrantsChanged{}, serve.DeniesChanged{})
			if header := oneLine(strings.Join(h.m.headerLines(), "\n")); strings.Contains(header, "grant") || strings.Contains(header, "deny") {
				t.Errorf("%s at %dx%d: revoked authority still in the header:\n%s", c.name, size.Width, size.Height, header)
			}
		}
	}
	h := newHarness(t)
	h.events(serve.Serving{Serving: inbox.Serving{Session: rootSession}}, serve.PolicyStatus{}, serve.GrantsChanged{Grants: map[string][]wire.Grant{rootSession: {{Surface: "bash", Pattern: "npm *"}}}})
	if header := oneLine(strings.Join(h.m.headerLines(), "\n")); !strings.Contains(header, "1 whole-session grant in force (p)") || strings.Contains(header, "deny") {
		t.Errorf("one grant, no deny:\n%s", header)
	}
}
