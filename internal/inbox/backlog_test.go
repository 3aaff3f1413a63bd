package inbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A burst beyond a session's in-flight slots: the names that do not fit
// wait in its backlog and are read as room frees, in arrival order, each
// once, without the session being listed again (issue 23); nothing is
// left counted afterwards.
func TestNamesSeenWhileFullAreReadFromTheBacklogInOrder(t *testing.T) {
	h := start(t, nil)
	const extra = 200
	var ids []string
	for i := range maxInFlight + extra {
		ids = append(ids, fmt.Sprintf("1791279012345-bl%04d-1", i))
		h.send(servedID, ids[i])
	}
	h.eventually("the names beyond the slots kept in the backlog", func() bool {
		s := h.in.sessions[servedID]
		return s.flight.Count() == maxInFlight && len(s.backlog.names) == extra && !s.backlog.incomplete
	})
	// The decision point of a queued scan: a complete backlog is read, and
	// requests/ is not listed.
	h.in.mu.Lock()
	kept := append([]string(nil), h.in.sessions[servedID].backlog.names...)
	h.in.mu.Unlock()
	for i, name := range kept {
		if want := ids[maxInFlight+i] + ".json"; name != want {
			t.Fatalf("backlog[%d] = %s, want %s (arrival order)", i, name, want)
		}
	}
	answered := 0
	for answered < len(ids) {
		a := h.rec.WaitFor(t, "arrived "+ids[answered], arrivedID(ids[answered])).(Arrived)
		if err := h.in.Respond(a.ID, approve()); err != nil {
			t.Fatal(err)
		}
		answered++
	}
	if n := h.rec.Count(isArrived); n != len(ids) {
		t.Fatalf("%d arrivals for %d requests", n, len(ids))
	}
	h.eventually("the backlog empty and uncounted", func() bool {
		s := h.in.sessions[servedID]
		return len(s.backlog.names) == 0 && len(s.backlog.queued) == 0 && h.in.backlogged == 0 && s.flight.Count() == 0
	})
}

func TestReadBacklogListsOnlyWhenANameWasNotKept(t *testing.T) {
	h := start(t, nil)
	for i := range maxInFlight + 3 {
		h.send(servedID, fmt.Sprintf("1791279012345-rb%04d-1", i))
	}
	h.eventually("three names kept", func() bool { return len(h.in.sessions[servedID].backlog.names) == 3 })
	if !h.in.readBacklog(servedID) {
		t.Fatal("a complete backlog asked for a listing")
	}
	h.in.mu.Lock()
	s := h.in.sessions[servedID]
	s.backlog.incomplete = true
	left := len(s.backlog.names)
	h.in.mu.Unlock()
	if left != 3 {
		t.Fatalf("%d names left with no room, want 3", left)
	}
	if !h.in.readBacklog(servedID) {
		t.Fatal("kept names are read before anything is listed")
	}
	h.in.mu.Lock()
	s.backlog = backlog{incomplete: true}
	h.in.backlogged = 0
	h.in.mu.Unlock()
	if h.in.readBacklog(servedID) {
		t.Fatal("an empty, incomplete backlog must be listed")
	}
}

// More names than a backlog keeps: the rest are found by listing once the
// backlog is read, and every request is still delivered once.
func TestBacklogOverflowFallsBackToListing(t *testing.T) {
	h := start(t, nil)
	n := maxInFlight + maxBacklog + 20
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("1791279012345-bo%05d-1", i)
		h.send(servedID, ids[i])
	}
	h.eventually("the backlog full and marked incomplete", func() bool {
		b := h.in.sessions[servedID].backlog
		return len(b.names) == maxBacklog && b.incomplete
	})
	seen := map[string]bool{}
	for len(seen) < n {
		for _, ev := range h.rec.Snapshot() {
			a, ok := ev.(Arrived)
			if !ok || seen[a.Request.ID] {
				continue
			}
			seen[a.Request.ID] = true
			if err := h.in.Respond(a.ID, approve()); err != nil {
				t.Fatal(err)
			}
		}
		h.rec.WaitForN(t, "more arrivals", isArrived, min(len(seen)+1, n))
	}
	if c := h.rec.Count(isArrived); c != n {
		t.Fatalf("%d arrivals for %d requests", c, n)
	}
}

// fillSlots fills the session's in-flight slots and keeps the names of
// extra (written in that order) in its backlog. requests/ and responses/
// exist and are watched first, so every name is seen by its event, in the
// order written, and no answer below sets off a listing.
func (h *harness) fillSlots(prefix string, extra []int) (slots []string) {
	h.t.Helper()
	warm := "1791279012345-" + prefix + "warm-1"
	h.send(servedID, warm)
	if err := h.in.Respond(h.rec.WaitFor(h.t, "arrived "+warm, arrivedID(warm)).(Arrived).ID, approve()); err != nil {
		h.t.Fatal(err)
	}
	for i := range maxInFlight {
		slots = append(slots, fmt.Sprintf("1791279012345-%s%04d-1", prefix, i))
		h.send(servedID, slots[i])
		// The first waits for the listing responses/ set off, if any.
		if i == 0 {
			h.rec.WaitFor(h.t, "arrived "+slots[0], arrivedID(slots[0]))
		}
	}
	for _, i := range extra {
		h.send(servedID, fmt.Sprintf("1791279012345-%s%04d-1", prefix, i))
	}
	h.eventually("the names beyond the slots kept", func() bool {
		s := h.in.sessions[servedID]
		return s.flight.Count() == maxInFlight && len(s.backlog.names) == len(extra)
	})
	// The recorder has every arrival so far: the warm-up and the slots.
	h.rec.WaitForN(h.t, "the slots' arrivals", isArrived, 1+maxInFlight)
	return slots
}

func isArrived(ev Event) bool { _, ok := ev.(Arrived); return ok }

// arrivalsAfter lists the request ids delivered after the first n
// arrivals, in delivery order.
func (h *harness) arrivalsAfter(n int) []string {
	var ids []string
	for _, ev := range h.rec.Filter(isArrived)[n:] {
		ids = append(ids, ev.(Arrived).Request.ID)
	}
	return ids
}

// A name an event reports while older names wait in the backlog for room
// waits behind them, even with a slot free: delivering it at once put it
// ahead of every kept name, and the oldest waited for half the slots to
// free (a test answering in order stalled under load).
func TestANameSeenWhileOlderOnesWaitForRoomQueuesBehindThem(t *testing.T) {
	h := start(t, nil)
	slots := h.fillSlots("q", []int{100, 101, 102})
	arrived := 1 + maxInFlight
	for _, id := range slots[:3] {
		if err := h.in.Respond(h.rec.WaitFor(t, "arrived "+id, arrivedID(id)).(Arrived).ID, approve()); err != nil {
			t.Fatal(err)
		}
	}
	late := "1791279012345-q0200-1"
	h.send(servedID, late)
	h.eventually("the late name seen", func() bool {
		_, kept := h.in.sessions[servedID].backlog.queued[late+".json"]
		return kept || h.in.sessions[servedID].flight.Count() > maxInFlight-3
	})
	if got := h.arrivalsAfter(arrived); len(got) > 0 {
		t.Fatalf("delivered %v ahead of the three names kept before it", got)
	}
	// Half the slots free: the backlog is read, oldest first.
	for _, id := range slots[3 : maxInFlight/2] {
		if err := h.in.Respond(h.rec.WaitFor(t, "arrived "+id, arrivedID(id)).(Arrived).ID, approve()); err != nil {
			t.Fatal(err)
		}
	}
	h.rec.WaitFor(t, "arrived "+late, arrivedID(late))
	want := []string{"1791279012345-q0100-1", "1791279012345-q0101-1", "1791279012345-q0102-1", late}
	if got := h.arrivalsAfter(arrived); !slices.Equal(got, want) {
		t.Fatalf("arrivals %v, want %v", got, want)
	}
}

// A listing while names wait in the backlog (a safety-net rescan, a
// structural event) reads the kept names in their arrival order before
// anything it lists, not the directory's sorted order: room freed during
// a listing went to whichever listed name came next.
func TestAListingReadsTheBacklogInArrivalOrder(t *testing.T) {
	h := start(t, nil)
	slots := h.fillSlots("l", []int{72, 71, 70, 69, 68, 67, 66, 65})
	h.eventually("the kept names in arrival order", func() bool {
		return h.in.sessions[servedID].backlog.names[0] == "1791279012345-l0072-1.json"
	})
	arrived := 1 + maxInFlight
	if err := h.in.Respond(h.rec.WaitFor(t, "arrived "+slots[0], arrivedID(slots[0])).(Arrived).ID, approve()); err != nil {
		t.Fatal(err)
	}
	// A directory made in the session root is a structural event: the
	// session is listed.
	if err := os.Mkdir(filepath.Join(h.layout.SessionDir(servedID), "poke"), 0o700); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitForN(t, "one arrival in the freed slot", isArrived, arrived+1)
	if got := h.arrivalsAfter(arrived); !slices.Equal(got, []string{"1791279012345-l0072-1"}) {
		t.Fatalf("arrivals %v, want the oldest kept name", got)
	}
}
