package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

func decidedByRule(t *testing.T, d *wire.DecisionSource, surface, pattern, origin string) {
	t.Helper()
	if d == nil || d.Kind != wire.DecidedByRule || d.Surface != surface ||
		d.Pattern == nil || *d.Pattern != pattern || d.Origin == nil || *d.Origin != origin {
		t.Fatalf("decidedBy = %+v, want rule %s %q %s", d, surface, pattern, origin)
	}
}

func decidedByUser(t *testing.T, d *wire.DecisionSource) {
	t.Helper()
	if d == nil || d.Kind != wire.DecidedByUser || d.Via != "dialog" {
		t.Fatalf("decidedBy = %+v, want user/dialog", d)
	}
}

func TestRuleAllowAndDenyAreAnsweredAtOnce(t *testing.T) {
	h := startServer(t, options{})
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls*", "global", ""))
	h.judge.set("sudo rm", ruleVerdict(resolve.Deny, "", "sudo *", "permtui", "  sudo is never allowed  "))
	h.judge.set("curl x", ruleVerdict(resolve.Deny, "", "curl *", "project", " \t"))

	h.send(intent("1791279012345-allow-1", "impl", "bash", "ls"))
	h.send(intent("1791279012345-deny-1", "impl", "bash", "sudo rm"))
	h.send(intent("1791279012345-deny-2", "impl", "bash", "curl x"))

	allow := h.await("1791279012345-allow-1")
	if !allow.Approved || allow.State != wire.StateApproved {
		t.Fatalf("allow: %+v", allow)
	}
	decidedByRule(t, allow.DecidedBy, "bash", "ls*", "global")

	deny := h.await("1791279012345-deny-1")
	if deny.Approved || deny.State != wire.StateDeniedWithReason || deny.DenialReason != "sudo is never allowed" {
		t.Fatalf("deny: %+v", deny)
	}
	decidedByRule(t, deny.DecidedBy, "bash", "sudo *", "permtui")

	blank := h.await("1791279012345-deny-2")
	if blank.Approved || blank.State != wire.StateDenied || blank.DenialReason != "" {
		t.Fatalf("blank-reason deny: %+v", blank)
	}

	for _, id := range []string{"1791279012345-allow-1", "1791279012345-deny-1", "1791279012345-deny-2"} {
		if d := h.decided(id); !d.Auto || d.Latency < 0 {
			t.Errorf("%s: %+v", id, d)
		}
		recs := h.auditFor(id)
		if len(recs) != 1 || recs[0]["auto"] != true || recs[0]["servedSession"] != rootID || recs[0]["agent"] != "impl" {
			t.Errorf("%s audit: %+v", id, recs)
		}
	}
	if n := h.rec.Count(func(ev Event) bool { _, ok := ev.(AskQueued); return ok }); n != 0 {
		t.Fatalf("%d rule-decided requests were queued for a person", n)
	}
}

func TestRequestWithoutAccessIntentAlwaysGoesToAPerson(t *testing.T) {
	h := startServer(t, options{before: func(h *harness) { h.judge.rogue = true }}) // would allow everything
	req := intent("1791279012345-nofacts-1", "impl", "bash", "ls")
	req.AccessIntent = nil
	path := h.send(req)
	ask := h.queued("1791279012345-nofacts-1")
	if ask.Verdict.Action != resolve.Ask {
		t.Fatalf("verdict %+v", ask.Verdict)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("request answered without a person: %v", err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-nofacts-1")
	if !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	decidedByUser(t, resp.DecidedBy)
}

type panickingJudge struct{}

func (panickingJudge) Resolve(*wire.Request, []wire.Grant) resolve.Verdict { panic("broken policy") }
func (panickingJudge) Covers(*wire.Request, wire.Grant) bool               { return false }

func TestAJudgeThatFailsSendsTheAskToAPerson(t *testing.T) {
	h := startServer(t, options{config: func(c *Config) { c.Judge = func() Judge { return panickingJudge{} } }})
	h.send(intent("1791279012345-panic-1", "impl", "bash", "ls"))
	if ask := h.queued("1791279012345-panic-1"); ask.Verdict.Action != resolve.Ask {
		t.Fatalf("%+v", ask.Verdict)
	}
}

func TestPersonApprovesOnce(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-once-1", "impl", "bash", "make"))
	ask := h.queued("1791279012345-once-1")
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-once-1")
	if !resp.Approved || resp.State != wire.StateApproved || resp.GrantWidth != wire.GrantWidthProven {
		t.Fatalf("%+v", resp)
	}
	decidedByUser(t, resp.DecidedBy)
	if d := h.decided("1791279012345-once-1"); d.Auto {
		t.Fatal("a person's decision reported as auto")
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); !errors.Is(err, ErrUnknownAsk) {
		t.Fatalf("second Decide = %v", err)
	}
	recs := h.auditFor("1791279012345-once-1")
	if len(recs) != 1 || recs[0]["state"] != "approved" || recs[0]["auto"] != false {
		t.Fatalf("audit %+v", recs)
	}
}

func TestPersonApprovesForSessionBothDirections(t *testing.T) {
	h := startServer(t, options{})
	write := wire.Grant{Surface: "path_write", Pattern: "/w/src/*"}
	h.send(intent("1791279012345-fam-1", "impl", "path_write", "/w/src/a.ts", write))
	h.send(intent("1791279012345-bash-1", "impl", "bash", "npm test", wire.Grant{Surface: "bash", Pattern: "npm test *"}))
	fam := h.queued("1791279012345-fam-1")
	bash := h.queued("1791279012345-bash-1")

	// Both directions only exists for directional path grants.
	for _, d := range []Decision{
		{Ask: bash.ID, Scope: ScopeSubagentBoth},
		{Ask: bash.ID, Scope: ScopeSessionBoth},
		{Ask: fam.ID, State: wire.StateApproved, Scope: ScopeSubagentBoth},
		{Ask: fam.ID, Scope: "everything"},
		{Ask: fam.ID, State: "maybe"},
		{Ask: fam.ID, State: "approved_for_session"}, // a scope is chosen by its kind
	} {
		if err := h.s.Decide(d); !errors.Is(err, ErrInvalidDecision) {
			t.Fatalf("Decide(%+v) = %v", d, err)
		}
	}

	if err := h.s.Decide(Decision{Ask: fam.ID, Scope: ScopeSubagentBoth}); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-fam-1")
	if !resp.Approved || resp.State != wire.StateApprovedForSession || resp.GrantWidth != wire.GrantWidthFamily {
		t.Fatalf("%+v", resp)
	}
	if err := h.s.Decide(Decision{Ask: bash.ID, Scope: ScopeSubagent}); err != nil {
		t.Fatal(err)
	}
	resp = h.await("1791279012345-bash-1")
	if resp.State != wire.StateApprovedForSession || resp.GrantWidth != wire.GrantWidthProven {
		t.Fatalf("%+v", resp)
	}
	// Subagent scope: the child records the grant, permtui does not.
	if g := h.grants.All(); len(g[rootID]) != 0 {
		t.Fatalf("grants recorded for subagent scope: %+v", g)
	}
}

func TestA3xChildGetsPlainApprovedForASessionApproval(t *testing.T) {
	h := startServer(t, options{})
	// 3.x children wrote only the core fields and message, and read
	// approved_for_session as unreadable (a deny).
	h.sendRaw("1791279012345-v3-1", []byte(`{"id":"1791279012345-v3-1","createdAt":1791279012345,"requesterSessionId":"c1","targetSessionId":"`+rootID+`","requesterAgentName":"old","message":"Agent 'old' wants to run ls"}`))
	ask := h.queued("1791279012345-v3-1")
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSubagent}); err != nil {
		t.Fatal(err)
	}
	if r := h.await("1791279012345-v3-1"); !r.Approved || r.State != wire.StateApproved {
		t.Fatalf("%+v", r)
	}
}

func TestWholeSessionGrantCoversOtherAgents(t *testing.T) {
	h := startServer(t, options{})
	grant := wire.Grant{Surface: "bash", Pattern: "npm test"}
	h.send(intent("1791279012345-ws-1", "implementer", "bash", "npm test", grant))
	h.send(intent("1791279012345-ws-2", "reviewer", "bash", "npm test"))
	h.send(intent("1791279012345-ws-3", "reviewer", "bash", "npm publish"))
	first := h.queued("1791279012345-ws-1")
	h.queued("1791279012345-ws-2")
	h.queued("1791279012345-ws-3")

	if err := h.s.Decide(Decision{Ask: first.ID, Scope: ScopeSession}); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-ws-1")
	if !resp.Approved || resp.State != wire.StateApproved {
		t.Fatalf("whole session must be answered approved: %+v", resp)
	}
	decidedByUser(t, resp.DecidedBy)
	if got := h.grants.For(rootID); !reflect.DeepEqual(got, []wire.Grant{grant}) {
		t.Fatalf("grants %+v", got)
	}
	h.rec.WaitFor(t, "grants changed", func(ev Event) bool {
		g, ok := ev.(GrantsChanged)
		return ok && len(g.Grants[rootID]) == 1
	})

	// The pending identical ask of another agent is now covered.
	covered := h.await("1791279012345-ws-2")
	if !covered.Approved {
		t.Fatalf("%+v", covered)
	}
	decidedByRule(t, covered.DecidedBy, "bash", "npm test", "session")
	if d := h.decided("1791279012345-ws-2"); !d.Auto {
		t.Fatal("covered ask not auto")
	}
	// A later identical ask from a third agent is answered at once.
	h.send(intent("1791279012345-ws-4", "tester", "bash", "npm test"))
	later := h.await("1791279012345-ws-4")
	decidedByRule(t, later.DecidedBy, "bash", "npm test", "session")

	// An uncovered ask still waits; after revoking, identical asks wait too.
	if _, err := os.Stat(h.layout.RequestPath(rootID, "1791279012345-ws-3")); err != nil {
		t.Fatalf("uncovered ask was answered: %v", err)
	}
	if err := h.s.RevokeGrant(rootID, grant); err != nil {
		t.Fatal(err)
	}
	h.send(intent("1791279012345-ws-5", "tester", "bash", "npm test"))
	h.queued("1791279012345-ws-5")

	recs := h.auditFor("1791279012345-ws-1")
	if len(recs) != 1 || recs[0]["state"] != string(wire.StateApprovedForServingSession) || recs[0]["grants"] == nil {
		t.Fatalf("audit %+v", recs)
	}
}

func TestWholeSessionBothDirectionsRecordsFamilyGrants(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-wsf-1", "impl", "external_directory_read", "/data/x", wire.Grant{Surface: "external_directory_read", Pattern: "/data/*"}))
	ask := h.queued("1791279012345-wsf-1")
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSessionBoth}); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-wsf-1")
	if resp.State != wire.StateApproved || resp.GrantWidth != wire.GrantWidthProven {
		t.Fatalf("%+v", resp)
	}
	want := []wire.Grant{{Surface: "external_directory", Pattern: "/data/*"}}
	if got := h.grants.For(rootID); !reflect.DeepEqual(got, want) {
		t.Fatalf("grants %+v, want %+v", got, want)
	}
}

func TestPersonDeniesWithReasonOrBlank(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-dr-1", "impl", "bash", "rm -rf build"))
	h.send(intent("1791279012345-dr-2", "impl", "bash", "rm -rf dist"))
	h.send(intent("1791279012345-dr-3", "impl", "bash", "rm -rf out"))
	a1, a2, a3 := h.queued("1791279012345-dr-1"), h.queued("1791279012345-dr-2"), h.queued("1791279012345-dr-3")
	if err := h.s.Decide(Decision{Ask: a1.ID, State: wire.StateDeniedWithReason, Reason: "  ask me in the main session\n"}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Decide(Decision{Ask: a2.ID, State: wire.StateDeniedWithReason, Reason: " \t "}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Decide(Decision{Ask: a3.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	r1 := h.await("1791279012345-dr-1")
	if r1.Approved || r1.State != wire.StateDeniedWithReason || r1.DenialReason != "ask me in the main session" {
		t.Fatalf("%+v", r1)
	}
	for _, id := range []string{"1791279012345-dr-2", "1791279012345-dr-3"} {
		r := h.await(id)
		if r.Approved || r.State != wire.StateDenied || r.DenialReason != "" {
			t.Fatalf("%s: %+v", id, r)
		}
		decidedByUser(t, r.DecidedBy)
	}
}

func TestDecideOnAWithdrawnRequestIsExpired(t *testing.T) {
	var path string
	h := startServer(t, options{
		// No rescan after the first: only Decide can notice the removal.
		config: func(c *Config) { c.Poll, c.Inbox.PollRescan = true, time.Hour },
		before: func(h *harness) {
			path = h.send(intent("1791279012345-exp-1", "impl", "bash", "make", wire.Grant{Surface: "bash", Pattern: "make *"}))
		},
	})
	ask := h.queued("1791279012345-exp-1")
	if err := os.Remove(path); err != nil { // the child gave up
		t.Fatal(err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession}); !errors.Is(err, ErrExpired) {
		t.Fatalf("Decide = %v, want ErrExpired", err)
	}
	w := h.rec.WaitFor(t, "withdrawn", func(ev Event) bool { w, ok := ev.(Withdrawn); return ok && w.ID == ask.ID }).(Withdrawn)
	if w.Pending {
		t.Fatal("a decided-then-expired ask reported as still pending")
	}
	if _, err := os.Stat(h.layout.ResponsePath(rootID, "1791279012345-exp-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("response written for a withdrawn request: %v", err)
	}
	if recs := h.auditFor("1791279012345-exp-1"); len(recs) != 0 {
		t.Fatalf("expired decision audited: %+v", recs)
	}
	if g := h.grants.All(); len(g[rootID]) != 0 {
		t.Fatalf("expired decision recorded grants: %+v", g)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); !errors.Is(err, ErrUnknownAsk) {
		t.Fatalf("Decide after expiry = %v", err)
	}
}

func TestWithdrawnWhileWaitingIsReportedPending(t *testing.T) {
	h := startServer(t, options{})
	path := h.send(intent("1791279012345-wdp-1", "impl", "bash", "make"))
	ask := h.queued("1791279012345-wdp-1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w := h.rec.WaitFor(t, "withdrawn", func(ev Event) bool { w, ok := ev.(Withdrawn); return ok && w.ID == ask.ID }).(Withdrawn)
	if !w.Pending {
		t.Fatal("withdrawn ask not reported pending")
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); !errors.Is(err, ErrUnknownAsk) {
		t.Fatalf("Decide = %v", err)
	}
}

func TestFailedResponseWriteIsRetriedWithoutAskingAgain(t *testing.T) {
	h := startServer(t, options{})
	path := h.send(intent("1791279012345-retry-1", "impl", "bash", "make"))
	ask := h.queued("1791279012345-retry-1")
	// A regular file where responses/ belongs makes the write fail, even as
	// root.
	respDir := h.layout.ResponsesDir(rootID)
	if err := os.Remove(respDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(respDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
		t.Fatalf("Decide = %v (a write failure is retried, not returned)", err)
	}
	h.rec.WaitFor(t, "write failed", func(ev Event) bool { w, ok := ev.(WriteFailed); return ok && w.Ask == ask.ID })
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("request not kept: %v", err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDenied}); !errors.Is(err, ErrAlreadyDecided) {
		t.Fatalf("second Decide = %v", err)
	}
	if err := os.Remove(respDir); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-retry-1")
	if !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if n := h.rec.Count(func(ev Event) bool { q, ok := ev.(AskQueued); return ok && q.Ask.ID == ask.ID }); n != 1 {
		t.Fatalf("queued %d times", n)
	}
	if recs := h.auditFor("1791279012345-retry-1"); len(recs) != 1 {
		t.Fatalf("retries audited again: %+v", recs)
	}
}

func TestAuditFailureAnswersNothingUntilRepaired(t *testing.T) {
	h := startServer(t, options{
		before: func(h *harness) {
			// A directory where the log file belongs: every append fails.
			if err := os.MkdirAll(filepath.Join(h.state, "audit.jsonl"), 0o700); err != nil {
				t.Fatal(err)
			}
		},
	})
	// Reported at start, before any request needs the log.
	deg := h.rec.WaitFor(t, "degraded", func(ev Event) bool { _, ok := ev.(Degraded); return ok }).(Degraded)
	if deg.Area != AreaAudit || !strings.Contains(deg.Problem, "answers wait") {
		t.Fatalf("degraded %+v", deg)
	}
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	path := h.send(intent("1791279012345-af-1", "impl", "bash", "ls"))
	h.rec.WaitFor(t, "write failed", func(ev Event) bool { _, ok := ev.(WriteFailed); return ok })
	if _, err := os.Stat(h.layout.ResponsePath(rootID, "1791279012345-af-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("answered without an audit record: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("request not kept: %v", err)
	}
	if err := os.Remove(filepath.Join(h.state, "audit.jsonl")); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-af-1")
	if !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	h.rec.WaitFor(t, "recovered", func(ev Event) bool { d, ok := ev.(Degraded); return ok && d.Problem == "" })
	if recs := h.auditFor("1791279012345-af-1"); len(recs) != 1 {
		t.Fatalf("audit %+v", recs)
	}
}

func TestAuditRecordIsDurableBeforeTheResponseAppears(t *testing.T) {
	h := startServer(t, options{})
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	ids := []string{"1791279012345-ad-1", "1791279012345-ad-2", "1791279012345-ad-3", "1791279012345-ad-4"}
	for _, id := range ids {
		h.send(intent(id, "impl", "bash", "ls"))
	}
	for _, id := range ids {
		h.await(id)
		// The child holds its answer: the record must already be on disk.
		recs := h.auditFor(id)
		if len(recs) != 1 {
			t.Fatalf("%s: audit %+v when the response appeared", id, recs)
		}
		r := recs[0]
		if r["state"] != "approved" || r["surface"] != "bash" || r["requesterSession"] != "child-impl" ||
			r["createdAt"] != float64(1791279012345) || r["decidedAt"] == nil {
			t.Fatalf("record %+v", r)
		}
		if mv, _ := r["matchValues"].([]any); len(mv) != 1 || mv[0] != "ls" {
			t.Fatalf("matchValues %+v", r["matchValues"])
		}
		if by, _ := r["decidedBy"].(map[string]any); by["kind"] != "rule" {
			t.Fatalf("decidedBy %+v", r["decidedBy"])
		}
	}
	st, err := os.Stat(filepath.Join(h.state, "audit.jsonl"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("audit mode %v, %v", st.Mode().Perm(), err)
	}
	if st, err := os.Stat(h.state); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v, %v", st.Mode().Perm(), err)
	}
}

func TestPolicyLoadedAnswersAsksThePolicyNowDecides(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-rr-1", "impl", "bash", "go test"))
	h.send(intent("1791279012345-rr-2", "impl", "bash", "go vet"))
	h.queued("1791279012345-rr-1")
	h.queued("1791279012345-rr-2")
	h.judge.set("go test", ruleVerdict(resolve.Deny, "", "go test*", "project", "not here"))
	h.s.PolicyLoaded(PolicyStatus{Problems: []string{"global config: bad JSON"}})
	resp := h.await("1791279012345-rr-1")
	if resp.State != wire.StateDeniedWithReason || resp.DenialReason != "not here" {
		t.Fatalf("%+v", resp)
	}
	h.rec.WaitFor(t, "policy", func(ev Event) bool { p, ok := ev.(PolicyStatus); return ok && len(p.Problems) == 1 })
	if _, err := os.Stat(h.layout.RequestPath(rootID, "1791279012345-rr-2")); err != nil {
		t.Fatalf("still-ask request answered: %v", err)
	}
}

// reloadingJudge is a fakeJudge whose policy is reloaded while it judges
// its first request: that verdict is the policy's before the reload, which
// makes the request's value allowed.
type reloadingJudge struct {
	*fakeJudge
	once  sync.Once
	srv   atomic.Pointer[Server]
	value string
}

func (j *reloadingJudge) Resolve(req *wire.Request, grants []wire.Grant) resolve.Verdict {
	v := j.fakeJudge.Resolve(req, grants)
	j.once.Do(func() {
		j.set(j.value, ruleVerdict(resolve.Allow, "bash", j.value, "global", ""))
		j.srv.Load().PolicyLoaded(PolicyStatus{})
	})
	return v
}

// An ask judged while the policy is reloaded, before the reload's rejudge
// could see it, is judged again by the new policy: it is not left waiting
// for a person on the old one's verdict (nor offered its scopes).
func TestAnAskJudgedAcrossAReloadIsJudgedAgain(t *testing.T) {
	judge := &reloadingJudge{fakeJudge: &fakeJudge{}, value: "go build"}
	h := startServer(t, options{config: func(c *Config) { c.Judge = func() Judge { return judge } }})
	judge.srv.Store(h.s)
	h.send(intent("1791279012345-ra-1", "impl", "bash", "go build"))
	if resp := h.await("1791279012345-ra-1"); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
}

func TestShutdownDeniesOpenAsksAndRemovesTheHeartbeat(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-sd-1", "impl", "bash", "make"))
	h.queued("1791279012345-sd-1")
	h.shutdown()
	data, err := os.ReadFile(h.layout.ResponsePath(rootID, "1791279012345-sd-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wire.ReadResponseAsChild(data)
	if err != nil || resp.Approved || resp.State != wire.StateDeniedWithReason || resp.DenialReason != ExitReason {
		t.Fatalf("%+v, %v", resp, err)
	}
	if resp.DecidedBy == nil || resp.DecidedBy.Kind != wire.DecidedByUnavailable {
		t.Fatalf("decidedBy %+v", resp.DecidedBy)
	}
	if _, err := os.Stat(h.layout.HeartbeatPath(rootID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("heartbeat left behind: %v", err)
	}
	if recs := h.auditFor("1791279012345-sd-1"); len(recs) != 1 {
		t.Fatalf("exit denial not audited: %+v", recs)
	}
	if err := h.s.Decide(Decision{Ask: 1, State: wire.StateApproved}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Decide after stop = %v", err)
	}
}

func TestEventQueueKeepsEveryEventInOrder(t *testing.T) {
	q := NewEventQueue()
	const n = 5000
	for i := 0; i < n; i++ { // nobody reads yet: the queue grows
		q.Push(Withdrawn{Withdrawn: inbox.Withdrawn{ID: AskID(i)}, Pending: i%2 == 0})
	}
	q.Close()
	i := 0
	for ev := range q.Out() {
		w := ev.(Withdrawn)
		if w.ID != AskID(i) || w.Pending != (i%2 == 0) {
			t.Fatalf("event %d out of order: %+v", i, w)
		}
		i++
	}
	if i != n {
		t.Fatalf("got %d events, want %d", i, n)
	}
}

func TestAuditLogGroupCommitKeepsEveryRecord(t *testing.T) {
	dir := t.TempDir()
	l := newAuditLog(filepath.Join(dir, "state"), func(Event) {})
	const n = 200
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			errs <- l.append(AuditRecord{RequestID: "r", State: wire.StateApproved, DecidedAt: int64(i)})
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	syncs := l.syncs.Load()
	l.close()
	if err := l.append(AuditRecord{}); !errors.Is(err, errAuditClosed) {
		t.Fatalf("append after close = %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "state", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[float64]bool{}
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		seen[r["decidedAt"].(float64)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records, want %d", len(seen), n)
	}
	if syncs < 1 || syncs > n {
		t.Fatalf("%d fsyncs for %d records", syncs, n)
	}
}

func TestUnattendedDecisionMayOnlyDeny(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-un-1", "impl", "bash", "make"))
	ask := h.queued("1791279012345-un-1")
	err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved, Unattended: true})
	if !errors.Is(err, ErrInvalidDecision) {
		t.Fatalf("unattended approve = %v, want ErrInvalidDecision", err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDenied, Unattended: true}); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-un-1")
	if resp.Approved || resp.DecidedBy == nil || resp.DecidedBy.Kind != wire.DecidedByUnavailable {
		t.Fatalf("%+v", resp)
	}
}

// An unattended denial with a reason says that reason as the decider's,
// in the response and the audit log: a relay that denies an ask because the
// hub's decision could not be read (or was refused) must not be recorded as
// a person's denial, nor as "no approver is attached".
func TestAnUnattendedDenialNamesItsReasonAsTheDecider(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-un-2", "impl", "bash", "make"))
	ask := h.queued("1791279012345-un-2")
	const why = "the hub's decision could not be read"
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDeniedWithReason, Reason: why, Unattended: true}); err != nil {
		t.Fatal(err)
	}
	resp := h.await("1791279012345-un-2")
	if by := resp.DecidedBy; resp.Approved || resp.DenialReason != why || by == nil || by.Kind != wire.DecidedByUnavailable || by.Reason == nil || *by.Reason != why {
		t.Fatalf("%+v %+v", resp, resp.DecidedBy)
	}
	recs := h.auditFor("1791279012345-un-2")
	if len(recs) != 1 {
		t.Fatalf("audit %v", recs)
	}
	if by, _ := recs[0]["decidedBy"].(map[string]any); by["kind"] != wire.DecidedByUnavailable || by["reason"] != why || recs[0]["approver"] != nil {
		t.Fatalf("audit %v", recs[0])
	}
}

// The replay index takes a committed batch's lines from memory only when no
// other writer appended around it; lines another permtui appended (a rule,
// another server's decision) are read from the file, and every decision is
// found where it is.
func TestAuditIndexFindsDecisionsAroundForeignAppends(t *testing.T) {
	dir := t.TempDir()
	l := newAuditLog(dir, func(Event) {})
	defer l.close()
	foreign := func(rec AuditRecord) {
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, "audit.jsonl"), os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.append(indexedRec("a")); err != nil {
		t.Fatal(err)
	}
	foreign(indexedRec("x"))
	if err := l.appendAll([]AuditRecord{indexedRec("b"), indexedRec("c")}); err != nil {
		t.Fatal(err)
	}
	if err := appendRuleRecord(dir, RuleRecord{Surface: "bash", Pattern: "ls", Action: "allow"}); err != nil {
		t.Fatal(err)
	}
	if err := l.append(indexedRec("d")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "x", "b", "c", "d"} {
		got, ok, looked := l.recorded(keyOf("s", id, "c", 1))
		if !ok || !looked || got.RequestID != id {
			t.Errorf("recorded(%s) = %+v, %v, %v", id, got, ok, looked)
		}
	}
}

// A batch cut off the log after a failed commit leaves the index: the next
// line written at that offset is not taken for the decision that was there.
func TestAuditIndexForgetsWhatATruncationCut(t *testing.T) {
	dir := t.TempDir()
	l := newAuditLog(dir, func(Event) {})
	defer l.close()
	if err := l.append(indexedRec("kept")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.append(indexedRec("cut")); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "audit.jsonl"), st.Size()); err != nil {
		t.Fatal(err)
	}
	l.unindexFrom(st.Size())
	if err := l.append(indexedRec("later")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := l.recorded(keyOf("s", "cut", "c", 1)); ok {
		t.Error("the cut decision is still found")
	}
	for _, id := range []string{"kept", "later"} {
		if got, ok, _ := l.recorded(keyOf("s", id, "c", 1)); !ok || got.RequestID != id {
			t.Errorf("recorded(%s) = %+v, %v", id, got, ok)
		}
	}
}

// An answer the audit log refuses is reported once, not at each retry: the
// log's state is the degraded report (new-user finding: a full disk printed
// a write_failed line per ask per retry).
func TestAnAnswerTheAuditRefusesIsReportedOnce(t *testing.T) {
	h := startServer(t, options{
		before: func(h *harness) {
			if err := os.MkdirAll(filepath.Join(h.state, "audit.jsonl"), 0o700); err != nil {
				t.Fatal(err)
			}
		},
	})
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	h.send(intent("1791279012345-once-1", "impl", "bash", "ls"))
	h.rec.WaitFor(t, "write failed", func(ev Event) bool { _, ok := ev.(WriteFailed); return ok })
	// Retries come at 250 ms, then 500 ms, 1 s: three at least by then.
	time.Sleep(2 * time.Second)
	if n := h.rec.Count(func(ev Event) bool { _, ok := ev.(WriteFailed); return ok }); n != 1 {
		t.Fatalf("%d write_failed events for one answer", n)
	}
	if err := os.Remove(filepath.Join(h.state, "audit.jsonl")); err != nil {
		t.Fatal(err)
	}
	if resp := h.await("1791279012345-once-1"); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
}

// A decision the index points at but cannot read back (the log cut by
// hand) is not taken for "no decision": recorded says it could not look,
// so the answer looks again before it records one of its own.
func TestAnUnreadableIndexedDecisionIsNotALookedAtAbsence(t *testing.T) {
	dir := t.TempDir()
	l := newAuditLog(dir, func(Event) {})
	defer l.close()
	if err := l.append(indexedRec("a")); err != nil {
		t.Fatal(err)
	}
	if _, ok, looked := l.recorded(keyOf("s", "a", "c", 1)); !ok || !looked {
		t.Fatalf("recorded before the cut: %v %v", ok, looked)
	}
	if err := os.Truncate(filepath.Join(dir, "audit.jsonl"), 10); err != nil {
		t.Fatal(err)
	}
	if _, ok, looked := l.recorded(keyOf("s", "a", "c", 1)); ok || looked {
		t.Fatalf("after the cut: found %v, looked %v; want neither", ok, looked)
	}
}

// indexedRec is an approval of request id in session s, for the index tests.
func indexedRec(id string) AuditRecord {
	return AuditRecord{RequestID: id, ServedSession: "s", RequesterSession: "c", CreatedAt: 1, State: wire.StateApproved, Approved: true}
}
