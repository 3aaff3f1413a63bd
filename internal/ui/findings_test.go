package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// The smaller findings of issue 19, one test each.

// The whole-session dialog counts only the other waiting asks the grant
// would answer: those of the same root session.
func TestWholeSessionCoverageCountsOnlyThatSession(t *testing.T) {
	h := newHarness(t)
	a := externalRead()
	same := externalRead()
	same.ID++
	other := externalRead()
	other.ID += 2
	other.Session = "0199a1b2-0000-7000-8000-0000000000bb"
	h.queue(a, same, other)
	h.keys("s", "j", "j")
	v := ansi.Strip(h.m.View())
	if !strings.Contains(v, "also answers 1 other waiting ask:") {
		t.Fatalf("the whole-session grant's count includes another root session's ask:\n%s", v)
	}
}

// An answer by a session deny is called a session deny, in the header's
// activity line and in the log; an answer by a grant stays a grant.
func TestASessionDenyIsCalledOne(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(100, 40))
	by := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp("rm *"), Origin: sp("session")}
	h.events(serve.Decided{Ask: bashChain(), Response: wire.Response{State: wire.StateDeniedWithReason,
		DenialReason: "no deletes", DecidedBy: by}, Auto: true})
	if v := ansi.Strip(h.m.View()); !strings.Contains(v, "✗ denied deployer by session deny bash rm *") {
		t.Fatalf("the header does not call the session deny one:\n%s", v)
	}
	if l := h.m.log[len(h.m.log)-1]; l.by != "session deny bash rm *" {
		t.Fatalf("log by = %q", l.by)
	}
	h.events(serve.Decided{Ask: pathWrite(), Response: wire.Response{Approved: true, State: wire.StateApproved,
		DecidedBy: &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "path_write", Pattern: sp("/w/p/src/*"), Origin: sp("session")}}, Auto: true})
	if l := h.m.log[len(h.m.log)-1]; l.by != "session grant path_write /w/p/src/*" {
		t.Fatalf("log by = %q", l.by)
	}
}

// "new ask under the highlight" goes once the person moves.
func TestNewAskMarkClearsWhenThePersonMoves(t *testing.T) {
	h := newHarness(t)
	a, b, c := pathWrite(), bashChain(), externalRead()
	h.queue(a, b, c)
	h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved}, Auto: true})
	if !strings.Contains(h.m.View(), "new ask under the highlight") {
		t.Fatal("no mark after the highlighted ask was answered by an event")
	}
	h.send(tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonWheelDown})
	if strings.Contains(h.m.View(), "new ask under the highlight") {
		t.Fatalf("the mark stayed after the person moved with the wheel:\n%s", h.m.View())
	}
}

// A console attached to a hub gets no policy status: the relays judge.
func TestHubConsoleSaysTheRelaysJudge(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OverHub = true })
	if v := h.m.View(); strings.Contains(v, "not loaded yet") || !strings.Contains(v, "policy: each relay's own") {
		t.Fatalf("hub header:\n%s", v)
	}
}

// d pressed twice on one row revokes it once and logs one revocation.
func TestRevokeTwiceLogsOnce(t *testing.T) {
	h := newHarness(t)
	g := wire.Grant{Surface: "bash", Pattern: "git status *"}
	h.events(serve.GrantsChanged{Grants: map[string][]wire.Grant{rootSession: {g}}})
	n := len(h.m.log)
	// The fake backend sends no GrantsChanged: the second d comes before
	// serve's new list, as it can with the real one.
	h.keys("p", "d", "d")
	if got := len(h.backend.revoked); got != 1 {
		t.Fatalf("%d revocations sent, want 1", got)
	}
	if got := len(h.m.log) - n; got != 1 {
		t.Fatalf("%d log entries, want 1", got)
	}
}

// Identical answers in a row are one log line with a count.
func TestIdenticalAnswersAreOneLogLine(t *testing.T) {
	h := newHarness(t)
	by := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp("git status*"), Origin: sp("global")}
	n := len(h.m.log)
	for i := range 20 {
		a := bashAsk(i, "builder", "/w/p", "git status")
		h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: by}, Auto: true})
	}
	if got := len(h.m.log) - n; got != 1 {
		t.Fatalf("%d log entries for 20 identical answers, want 1", got)
	}
	h.keys("l")
	if v := ansi.Strip(h.m.View()); !strings.Contains(v, "✓ approved  builder · bash · git status  ×20") {
		t.Fatalf("the log does not count them:\n%s", v)
	}
}

// The full view wraps long values at spaces, not inside a word, and keeps
// every character.
func TestFullViewWrapsAtWords(t *testing.T) {
	h := newHarness(t)
	h.send(sizeMsg(60, 30))
	cmd := "git commit --message 'a fairly long message that goes on' --author someone@example.com"
	var got []string
	for _, l := range h.m.renderFields([]field{{label: "match", text: cmd}}, true, 0) {
		got = append(got, ansi.Strip(l)[labelWidth+1:])
	}
	if strings.Join(got, "") != cmd {
		t.Fatalf("wrapped value lost characters: %q", got)
	}
	for _, l := range got[:len(got)-1] {
		if !strings.HasSuffix(l, " ") {
			t.Fatalf("a line breaks inside a word: %q", got)
		}
	}
	h.queue(bashAsk(1, "builder", "/w/p", cmd))
	h.keys("v")
	if v := ansi.Strip(h.m.View()); !strings.Contains(v, "\n          goes on' --author someone@example.com") {
		t.Fatalf("the full view does not wrap at words:\n%s", v)
	}
}

// A revocation of an earlier run, from the audit log, is in the log after
// a restart, worded as it was when it happened.
func TestRevocationsSurviveARestartInTheLog(t *testing.T) {
	h := newHarness(t)
	g := wire.Grant{Surface: "bash", Pattern: "npm test"}
	rm := serve.SessionDeny{Grant: wire.Grant{Surface: "bash", Pattern: "rm *"}, Reason: "no deletes"}
	h.events(serve.History{Records: []serve.AuditRecord{
		{Kind: serve.AuditRevoked, ServedSession: rootSession, Surface: "bash", Grants: []wire.Grant{g}, DecidedAt: testNow.UnixMilli()},
		{Kind: serve.AuditRevoked, ServedSession: rootSession, Surface: "bash", SessionDeny: &rm, DecidedAt: testNow.UnixMilli()},
	}})
	h.keys("l")
	v := ansi.Strip(h.m.View())
	for _, want := range []string{"revoked whole-session grant bash npm test of " + rootSession, "revoked session deny bash rm * of " + rootSession} {
		if !strings.Contains(strings.Join(strings.Fields(v), " "), want) {
			t.Fatalf("the log lacks %q:\n%s", want, v)
		}
	}
}
