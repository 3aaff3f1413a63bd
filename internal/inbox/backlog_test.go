package inbox

import (
	"fmt"
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
	if n := h.rec.Count(func(ev Event) bool { _, ok := ev.(Arrived); return ok }); n != len(ids) {
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
		h.rec.WaitForN(t, "more arrivals", func(ev Event) bool { _, ok := ev.(Arrived); return ok }, min(len(seen)+1, n))
	}
	if c := h.rec.Count(func(ev Event) bool { _, ok := ev.(Arrived); return ok }); c != n {
		t.Fatalf("%d arrivals for %d requests", c, n)
	}
}
