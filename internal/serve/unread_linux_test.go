package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// A second request under a decided request's id, judged afresh (its
// identity was forgotten once the first was answered, decision 0119, or
// it names another requester), never replaces the first answer while that
// answer waits unread: a person's deny is not turned into an automatic
// approve. The second answer is recorded, reported once as waiting, and
// written only after the first child took its own (decision 0201).
func TestAnUnreadAnswerIsNeverReplaced(t *testing.T) {
	for _, tc := range []struct {
		name, requester string
		reads           int // reads of the second file before the first child reads its answer
	}{
		{"the same identity again", "child-builder", 1},
		// Its first redelivery found the first answer there too, and
		// said nothing more.
		{"another requester", "child-scout", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const id = "1796439900000-dupdup04-1"
			h := startServer(t, options{})
			h.judge.set("make deploy-prod", ruleVerdict(resolve.Ask, "", "*", "global", ""))
			h.judge.set("git status", ruleVerdict(resolve.Allow, "bash", "git status", "global", ""))
			h.send(intent(id, "builder", "bash", "make deploy-prod"))
			ask := h.queued(id)
			if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDenied}); err != nil {
				t.Fatal(err)
			}
			h.decided(id)
			// Its request file is gone, so its identity is forgotten
			// once the delivery is logged (decision 0119).
			deadline := time.Now().Add(testkit.WaitLimit)
			for dels := h.deliveriesFor(id); len(dels) == 0 || dels[0]["requestGone"] != true; dels = h.deliveriesFor(id) {
				if time.Now().After(deadline) {
					t.Fatalf("deliveries %+v", dels)
				}
				time.Sleep(time.Millisecond)
			}

			// The second file, under another name, watched from before
			// the inbox can see it, so its reads are counted.
			other := intent(id, "scout", "bash", "git status")
			other.RequesterSessionID = tc.requester
			data, err := wire.MarshalRequest(other)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(h.layout.RequestsDir(rootID), "zzz-other.tmp")
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			reads := testkit.Opens(t, tmp)
			path := filepath.Join(h.layout.RequestsDir(rootID), "zzz-other.json")
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			second := h.rec.WaitFor(t, "the second answer waits", func(ev Event) bool {
				w, ok := ev.(WriteFailed)
				return ok && strings.Contains(w.Err, "that no child has taken")
			}).(WriteFailed)
			deadline = time.Now().Add(testkit.WaitLimit)
			for reads()[tmp] < tc.reads {
				if time.Now().After(deadline) {
					t.Fatalf("the second request was read %d times", reads()[tmp])
				}
				time.Sleep(10 * time.Millisecond)
			}
			if resp := h.await(id); resp.Approved {
				t.Fatalf("the first child read %+v, not the person's deny", resp)
			}
			resp := h.await(id)
			if !resp.Approved || resp.DecidedBy == nil || resp.DecidedBy.Kind != "rule" {
				t.Fatalf("the second answer %+v", resp)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the second request is still there: %v", err)
			}
			waits := h.rec.Count(func(ev Event) bool { w, ok := ev.(WriteFailed); return ok && w.Ask == second.Ask })
			if waits != 1 {
				t.Errorf("the wait was reported %d times", waits)
			}
			h.shutdown()
			if recs := h.auditFor(id); len(recs) != 2 || recs[0]["state"] != "denied" || recs[1]["state"] != "approved" {
				t.Fatalf("decisions for the id: %+v", recs)
			}
		})
	}
}
