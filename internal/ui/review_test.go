package ui

import (
	"errors"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// The review of issue 19: an approval that answers several asks checks the
// file of every write or edit it approves, not only the highlighted one's.

const libSource = "export const lib = 1;\n"

// twoEdits are edits of two files of one session, each file with its diff
// read; stamps holds each file's stamp, changed by the test.
func twoEdits(t *testing.T, tweak ...func(*Options)) (h *harness, a, b serve.Ask, stamps map[string]string) {
	t.Helper()
	a, b = editAsk(), editAsk()
	b.ID += 7
	b.Request.Value = sp("/w/p/src/lib.ts")
	b.Request.AccessIntent.MatchValues = []string{"/w/p/src/lib.ts", "src/lib.ts"}
	b.Request.AccessIntent.BoundaryValue = sp("/w/p/src/lib.ts")
	b.Request.Payload = clonePayload(b.Request.Payload)
	b.Request.Payload.Request.Value = "/w/p/src/lib.ts"
	b.Request.Payload.Evidence[0].Text = `{"path":"src/lib.ts","oldText":"lib = 1","newText":"lib = 2"}`
	files := map[string]string{"/w/p/src/app.ts": appSource, "/w/p/src/lib.ts": libSource}
	stamps = map[string]string{"/w/p/src/app.ts": "v1", "/w/p/src/lib.ts": "v1"}
	h = newHarness(t, append([]func(*Options){func(o *Options) {
		o.ReadFile = func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return noFiles(p)
		}
		o.FileStamp = func(p string) string { return stamps[p] }
	}}, tweak...)...)
	h.queue(a, b)
	h.keys("j", "k") // each diff on screen
	return h, a, b, stamps
}

func clonePayload(p *wire.Payload) *wire.Payload {
	c := *p
	c.Evidence = append([]wire.Evidence(nil), p.Evidence...)
	return &c
}

// A selection's y checks the file of every selected ask: one changed since
// its diff was read is named, read again, and must be looked at before the
// selection can be approved.
func TestASelectionChecksTheFileOfEveryAskItApproves(t *testing.T) {
	h, a, b, stamps := twoEdits(t)
	h.keys("j", "space", "k", "space") // both selected, a highlighted
	stamps["/w/p/src/lib.ts"] = "v2"
	h.keys("y")
	h.wantDecisions()
	h.wantStatus("lib.ts")
	h.wantStatus("changed after its diff was read")
	if e := h.m.find(b.ID); e.diffReread != true {
		t.Fatal("the changed file's diff was not read again")
	}
	h.keys("y")
	h.wantDecisions()
	h.wantStatus("lib.ts") // not seen since it was read again
	h.keys("j", "y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved}, serve.Decision{Ask: b.ID, State: wire.StateApproved})
}

// The highlighted ask's own file is checked when y is pressed, not only on
// the next tick.
func TestApprovingChecksTheHighlightedFileAtOnce(t *testing.T) {
	h, a, _, stamps := twoEdits(t)
	stamps["/w/p/src/app.ts"] = "v2"
	h.keys("y")
	h.wantDecisions()
	h.wantStatus("app.ts")
	h.keys("y")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved})
}

// A whole-session grant checks the file of every other ask it would
// answer.
func TestAWholeSessionGrantChecksTheFilesOfTheAsksItAlsoAnswers(t *testing.T) {
	h, a, _, stamps := twoEdits(t)
	stamps["/w/p/src/lib.ts"] = "v2"
	chooseScope(h, serve.ScopeSession)
	h.keys("enter")
	h.wantDecisions()
	h.wantStatus("lib.ts")
	h.keys("j", "k")
	chooseScope(h, serve.ScopeSession)
	h.keys("enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, Scope: serve.ScopeSession})
}

// An allow rule from R checks the file of every waiting ask it decides
// before it is written.
func TestAnAllowRuleChecksTheFilesOfTheAsksItDecides(t *testing.T) {
	rules := &fakeRules{preview: RulePreview{Waiting: []int{0, 1}}}
	h, _, _, stamps := twoEdits(t, withRules(rules))
	stamps["/w/p/src/lib.ts"] = "v2"
	h.keys("R", "enter")
	if len(rules.writes) != 0 {
		t.Fatal("an allow rule was written deciding an ask whose file changed unseen")
	}
	h.wantStatus("lib.ts")
	h.keys("esc", "j", "k", "R", "enter")
	if len(rules.writes) != 1 || rules.writes[0].Action != resolve.Allow {
		t.Fatalf("writes %+v, want the allow rule once its asks were seen again", rules.writes)
	}
}

// a a checks the files of the identical asks it approves.
func TestApproveIdenticalChecksEveryFile(t *testing.T) {
	h, a, _, stamps := twoEdits(t)
	c := editAsk()
	c.ID += 9
	h.queue(c)
	stamps["/w/p/src/app.ts"] = "v2"
	h.keys("a", "a")
	h.wantDecisions()
	h.wantStatus("changed after")
	if !strings.Contains(h.m.status, "app.ts") {
		t.Fatalf("status %q does not name the changed file", h.m.status)
	}
	h.keys("G", "g", "a", "a")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateApproved}, serve.Decision{Ask: c.ID, State: wire.StateApproved})
}

// The waiting asks N's session deny denies at once are said to be denied by
// the person's N, not "answered by recorded authority"; an answer by
// another session deny is not called theirs.
func TestTheAsksNDeniesAreSaidToBeTheirs(t *testing.T) {
	h := newHarness(t)
	a, other := twoWrites()
	third := bashAsk(1, "builder", "/w/p", "rm -rf build")
	h.queue(a, other, third)
	h.keys("N", "keep out of src", "enter")
	h.wantDecisions(serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: "keep out of src",
		DenyFor: &wire.Grant{Surface: "path_write", Pattern: "/w/p/src/*"}})
	byDeny := func(g wire.Grant) wire.Response {
		return wire.Response{State: wire.StateDeniedWithReason, DenialReason: "keep out of src",
			DecidedBy: &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: g.Surface, Pattern: sp(g.Pattern), Origin: sp(resolve.OriginSession)}}
	}
	h.events(serve.Decided{Ask: other, Response: byDeny(wire.Grant{Surface: "path_write", Pattern: "/w/p/src/*"}), Auto: true})
	h.wantStatus("1 waiting ask denied by your N (session deny path_write /w/p/src/*)")
	if strings.Contains(h.m.status, "recorded authority") {
		t.Fatalf("status %q calls the person's deny recorded authority", h.m.status)
	}
	h.events(serve.Decided{Ask: third, Response: byDeny(wire.Grant{Surface: "bash", Pattern: "rm *"}), Auto: true})
	h.wantStatus("1 waiting ask denied by your N")
	h.wantStatus("1 queued ask answered by recorded authority")
}

// An edit whose old text occurs more than once is not previewed at its
// first occurrence: the detail says how often it occurs and that pi
// refuses such an edit.
func TestANonUniqueOldTextIsSaidPlainly(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ReadFile = oneFile("/w/p/src/app.ts", appSource) })
	a := editAsk()
	a.Request.Payload.Evidence[0].Text = `{"path":"src/app.ts","oldText":"export const","newText":"const"}`
	h.queue(a)
	v := strings.Join(strings.Fields(ansi.Strip(h.m.View())), " ")
	if !strings.Contains(v, "the edit's old text occurs 2 times in the current file; pi's edit tool refuses an old text that is not unique, so the edit would fail and change nothing") {
		t.Fatalf("the detail does not say the old text is not unique:\n%s", ansi.Strip(h.m.View()))
	}
	if strings.Contains(v, "- export const x = 1;") {
		t.Fatalf("the first occurrence is previewed as the change:\n%s", ansi.Strip(h.m.View()))
	}
}

// A deny the person's N did not make is not credited to them: an N whose
// sending failed, or one revoked since, leaves a later denial by an
// identical session deny (another console's, another approver's) to
// recorded authority (review finding).
func TestANDenyNotMadeOrRevokedIsNotTheirs(t *testing.T) {
	deny := wire.Grant{Surface: "path_write", Pattern: "/w/p/src/*"}
	byDeny := wire.Response{State: wire.StateDeniedWithReason, DenialReason: "keep out of src",
		DecidedBy: &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: deny.Surface, Pattern: sp(deny.Pattern), Origin: sp(resolve.OriginSession)}}
	for _, c := range []string{"failed", "revoked"} {
		h := newHarness(t)
		a, other := twoWrites()
		h.queue(a, other)
		if c == "failed" {
			h.backend.decideErr = errors.New("disk full")
		}
		h.keys("N", "keep out of src", "enter")
		if c == "revoked" {
			h.events(serve.DeniesChanged{Denies: map[string][]serve.SessionDeny{a.Session: {{Grant: deny, Reason: "keep out of src"}}}},
				serve.DeniesChanged{})
		}
		h.events(serve.Decided{Ask: other, Response: byDeny, Auto: true})
		if strings.Contains(h.m.status, "your N") {
			t.Errorf("%s: status %q credits the person with the deny", c, h.m.status)
		}
	}
}
