package serve

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// Issue 11 bug 1: whole-session grants loaded at start are reported at
// start, not only after the next change, so the console's g and headless
// show them.
func TestGrantsLoadedAtStartAreReported(t *testing.T) {
	saved := map[string][]wire.Grant{rootID: {{Surface: "bash", Pattern: "make test *"}}}
	h := startServer(t, options{before: func(h *harness) {
		if err := h.grants.Add(rootID, saved[rootID]); err != nil {
			t.Fatal(err)
		}
	}})
	ev := h.rec.WaitFor(t, "grants at start", func(ev Event) bool {
		_, ok := ev.(GrantsChanged)
		return ok
	}).(GrantsChanged)
	if !reflect.DeepEqual(ev.Grants, saved) {
		t.Fatalf("grants at start = %v, want %v", ev.Grants, saved)
	}
}

// Issue 11 bug 5: the policy event carries where permtui looked when it
// found no policy file.
func TestPolicyStatusSaysNoFileWasFound(t *testing.T) {
	h := startServer(t, options{})
	const notice = `no policy file found, so every ask goes to a person; looked in "/nowhere/settings.json"`
	h.s.PolicyLoaded(PolicyStatus{NoFile: notice})
	ev := h.rec.WaitFor(t, "policy status", func(ev Event) bool {
		_, ok := ev.(PolicyStatus)
		return ok
	}).(PolicyStatus)
	if ev.NoFile != notice || ev.NoAutoAllow {
		t.Fatalf("policy status = %+v", ev)
	}
}

// The console's quit choice "leave them for the next server": nothing is
// answered or audited at shutdown; the request stays for the next server.
func TestLeaveWaitingOnExitLeavesTheRequest(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-lv-1", "impl", "bash", "make"))
	h.queued("1791279012345-lv-1")
	h.s.LeaveWaitingOnExit()
	h.shutdown()
	if _, err := os.Stat(h.layout.ResponsePath(rootID, "1791279012345-lv-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an answer was written: %v", err)
	}
	if _, err := os.Stat(h.layout.RequestPath(rootID, "1791279012345-lv-1")); err != nil {
		t.Fatalf("the request is gone: %v", err)
	}
	if recs := h.auditFor("1791279012345-lv-1"); len(recs) != 0 {
		t.Fatalf("audited: %+v", recs)
	}
}

// A restarted server reports the decisions of earlier runs from the audit
// log, so the console's log shows them.
func TestHistoryFromTheAuditLogAtStart(t *testing.T) {
	h := startServer(t, options{before: func(h *harness) {
		if err := os.MkdirAll(h.state, 0o700); err != nil {
			t.Fatal(err)
		}
		lines := `{"askId":1,"requestId":"r-1","servedSession":"s","requesterSession":"c","agent":"impl","surface":"bash","matchValues":["make"],"state":"approved","approved":true,"createdAt":1,"decidedAt":2,"auto":false}
{"kind":"rule","file":"x"}
{"askId":2,"requestId":"r-2","servedSession":"s","requesterSession":"c","agent":"impl","surface":"bash","matchValues":["rm -rf /"],"state":"denied","approved":false,"createdAt":3,"decidedAt":4,"auto":true}
`
		if err := os.WriteFile(filepath.Join(h.state, "audit.jsonl"), []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	ev := h.rec.WaitFor(t, "history", func(ev Event) bool { _, ok := ev.(History); return ok }).(History)
	if len(ev.Records) != 2 || ev.Records[0].RequestID != "r-1" || ev.Records[1].MatchValues[0] != "rm -rf /" || !ev.Records[1].Auto {
		t.Fatalf("history = %+v", ev.Records)
	}
}

// An ask that expires waiting for a person leaves an expiry line in the
// audit log: a restarted console's log shows it, and it is no decision (a
// later request under the same id is judged, not answered from it).
func TestExpiryIsInTheHistoryAndIsNoDecision(t *testing.T) {
	first := startServer(t, options{})
	const id = "1791279012345-exp-1"
	path := first.send(intent(id, "impl", "bash", "make"))
	first.queued(id)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	first.rec.WaitFor(t, "withdrawn", func(ev Event) bool { w, ok := ev.(Withdrawn); return ok && w.Pending })
	first.shutdown() // the expiry line is written before the log closes

	var expiries []map[string]any
	for _, r := range first.auditLines() {
		if r["kind"] == AuditExpired {
			expiries = append(expiries, r)
		}
	}
	if len(expiries) != 1 || expiries[0]["requestId"] != id || expiries[0]["agent"] != "impl" || expiries[0]["reason"] != nil {
		t.Fatalf("expiry lines %+v", expiries)
	}
	if recs := first.auditFor(id); len(recs) != 0 {
		t.Fatalf("an expiry was recorded as a decision: %+v", recs)
	}

	second := startServer(t, options{reuse: first})
	ev := second.rec.WaitFor(t, "history", func(ev Event) bool { _, ok := ev.(History); return ok }).(History)
	if len(ev.Records) != 1 || ev.Records[0].Kind != AuditExpired || ev.Records[0].MatchValues[0] != "make" {
		t.Fatalf("history %+v", ev.Records)
	}
	second.judge.set("make", ruleVerdict(resolve.Allow, "", "make", "global", ""))
	second.send(intent(id, "impl", "bash", "make"))
	if resp := second.await(id); !resp.Approved {
		t.Fatalf("a request under an expired id was not judged: %+v", resp)
	}
}

// An ask whose request file another took the name of (the child wrote its
// request again) is withdrawn saying so, and its expiry line in the audit
// log gives ReplacedReason, so no front end says the child stopped waiting.
func TestAReplacedAsksExpirySaysItsFileWasReplaced(t *testing.T) {
	h := startServer(t, options{})
	const id = "1791279012345-exp-2"
	h.send(intent(id, "impl", "bash", "make"))
	first := h.queued(id)
	h.send(intent(id, "impl", "bash", "make"))
	h.rec.WaitFor(t, "withdrawn as replaced", func(ev Event) bool {
		w, ok := ev.(Withdrawn)
		return ok && w.ID == first.ID && w.Pending && w.Replaced
	})
	h.shutdown()
	var reasons []any
	for _, r := range h.auditLines() {
		if r["kind"] == AuditExpired {
			reasons = append(reasons, r["reason"])
		}
	}
	if len(reasons) != 1 || reasons[0] != ReplacedReason {
		t.Fatalf("expiry reasons %v, want [%q]", reasons, ReplacedReason)
	}
}

// A revoked whole-session grant leaves a line in the audit log, so a
// restarted console's log still says it was revoked; it is no decision.
func TestRevocationIsInTheHistory(t *testing.T) {
	first := startServer(t, options{})
	first.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	grant := wire.Grant{Surface: "bash", Pattern: "npm test"}
	if err := first.grants.Add(rootID, []wire.Grant{grant}); err != nil {
		t.Fatal(err)
	}
	if err := first.s.RevokeGrant(rootID, grant); err != nil {
		t.Fatal(err)
	}
	first.shutdown() // the line is written before the log closes

	second := startServer(t, options{reuse: first})
	ev := second.rec.WaitFor(t, "history", func(ev Event) bool { _, ok := ev.(History); return ok }).(History)
	if len(ev.Records) != 1 || ev.Records[0].Kind != AuditRevoked || ev.Records[0].ServedSession != rootID ||
		!reflect.DeepEqual(ev.Records[0].Grants, []wire.Grant{grant}) || ev.Records[0].DecidedAt == 0 {
		t.Fatalf("history %+v", ev.Records)
	}
}
