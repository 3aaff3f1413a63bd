package inbox

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
)

// Rescans are an hour apart in these tests: fsnotify events alone must
// carry the work (issue 9: the rescan is only a safety net).

// A backlog is rescanned once half the slots are free, not per answer.
func TestFreedSlotsDeliverTheWaitingRequestWithoutARescan(t *testing.T) {
	ids := make([]string, maxInFlight+1)
	h := start(t, func(c *Config) {
		early := &harness{t: t, layout: c.Layout}
		// responses/ exists already: its creation by the first answer
		// would rescan the session's shape, which may deliver the waiting
		// request within the bound, before half the slots are free.
		if err := safefs.MkdirPrivate(c.Layout.ResponsesDir(servedID)); err != nil {
			t.Fatal(err)
		}
		for i := range ids {
			ids[i] = fmt.Sprintf("1791279012345-sl%04d-1", i)
			early.send(servedID, ids[i])
		}
	})
	var delivered []Arrived
	for _, id := range ids[:maxInFlight] {
		delivered = append(delivered, h.rec.WaitFor(t, "in flight", arrivedID(id)).(Arrived))
	}
	if h.rec.Count(arrivedID(ids[maxInFlight])) != 0 {
		t.Fatal("delivered beyond the in-flight bound")
	}
	for _, a := range delivered[:maxInFlight/2] {
		if err := h.in.Respond(a.ID, approve()); err != nil {
			t.Fatal(err)
		}
	}
	h.rec.WaitFor(t, "the one left waiting", arrivedID(ids[maxInFlight]))
}

func TestARequestIDAnsweredFreesItsLaterDuplicate(t *testing.T) {
	h := start(t, nil)
	h.writeRequest(servedID, "a.json", requestJSON("1791279012345-dup-1", servedID))
	a := h.rec.WaitFor(t, "a", arrivedID("1791279012345-dup-1")).(Arrived)
	h.writeRequest(servedID, "b.json", requestJSON("1791279012345-dup-1", servedID))
	if err := h.in.Respond(a.ID, approve()); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "b after a", func(ev Event) bool {
		b, ok := ev.(Arrived)
		return ok && b.ID != a.ID && b.Request.ID == "1791279012345-dup-1"
	})
}

// pi's children remove empty inbox directories after each ask (§2.5):
// cached directories must not outlive them.
func TestInboxDirectoriesRemovedAndRecreatedByChildren(t *testing.T) {
	h := start(t, nil)
	for round := range 3 {
		id := fmt.Sprintf("1791279012345-cl%d-1", round)
		h.send(servedID, id)
		a := h.rec.WaitFor(t, "arrived", arrivedID(id)).(Arrived)
		if err := h.in.Respond(a.ID, approve()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		resp := h.layout.ResponsePath(servedID, id)
		mustExist(t, resp)
		// The child reads its answer, deletes it, and cleans up.
		for _, p := range []string{resp, h.layout.RequestsDir(servedID), h.layout.ResponsesDir(servedID)} {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Refreshing a heartbeat allocates no inode: the record and one spare trade
// names (issue 9, decision 0091); on exit neither is left behind.
func TestHeartbeatRefreshUsesTwoInodes(t *testing.T) {
	h := start(t, nil)
	h.rec.WaitFor(t, "serving", func(ev Event) bool { s, ok := ev.(Serving); return ok && s.Session == servedID })
	path := h.layout.HeartbeatPath(servedID)
	inodes := map[uint64]bool{}
	last := int64(0)
	deadline := time.After(testkit.WaitLimit)
	for refreshes := 0; refreshes < 10; {
		hb := readHB(t, path)
		if hb.PID != os.Getpid() {
			t.Fatalf("heartbeat %+v", hb)
		}
		if hb.UpdatedAt != last {
			last = hb.UpdatedAt
			refreshes++
			var st unix.Stat_t
			if err := unix.Stat(path, &st); err != nil {
				t.Fatal(err)
			}
			inodes[st.Ino] = true
		}
		select {
		case <-deadline:
			t.Fatal("heartbeat not refreshed ten times")
		case <-time.After(2 * time.Millisecond):
		}
	}
	if len(inodes) > 2 {
		t.Fatalf("%d inodes for ten refreshes, want at most 2", len(inodes))
	}
	h.shutdown()
	if entries, _ := os.ReadDir(h.layout.ServingDir()); len(entries) != 0 {
		t.Fatalf("serving/ after exit: %v", entries)
	}
}

// The first look is reported after the arrivals it found (a relay counts on
// the order, decision 0275); it is whole only when no request was left
// unread, here for lack of in-flight slots.
func TestTheFirstLookIsReportedAfterWhatItFound(t *testing.T) {
	for _, n := range []int{2, maxInFlight + 1} {
		h := start(t, func(c *Config) {
			early := &harness{t: t, layout: c.Layout}
			for i := range n {
				early.send(servedID, fmt.Sprintf("1791279012345-fl%04d-1", i))
			}
		})
		h.rec.WaitFor(t, "the first look", func(ev Event) bool { _, ok := ev.(Scanned); return ok })
		events := h.rec.Snapshot()
		i := slices.IndexFunc(events, func(ev Event) bool { _, ok := ev.(Scanned); return ok })
		arrived := 0
		for _, ev := range events[:i] {
			if _, ok := ev.(Arrived); ok {
				arrived++
			}
		}
		if want := min(n, maxInFlight); arrived != want || events[i].(Scanned).Whole != (n <= maxInFlight) {
			t.Errorf("%d requests: %d arrived before %+v", n, arrived, events[i])
		}
	}
}
