package serve

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

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
	h.s.PolicyLoaded(nil, notice)
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
