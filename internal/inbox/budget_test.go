package inbox

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

func deferring(waiting int) func(Event) bool {
	return func(ev Event) bool { d, ok := ev.(Deferring); return ok && d.Waiting == waiting }
}

// arrivals waits for one Arrived per request id and returns them in
// delivery order.
func (h *harness) arrivals(ids ...string) []Arrived {
	h.t.Helper()
	var got []Arrived
	for _, id := range ids {
		got = append(got, h.rec.WaitFor(h.t, "arrived "+id, arrivedID(id)).(Arrived))
	}
	slices.SortFunc(got, func(a, b Arrived) int { return cmp.Compare(a.ID, b.ID) })
	return got
}

// Scenario 2 of issue 8: asks for a person beyond the parked budget are
// let go of, wait on disk, and come back under the same AskID once room
// frees, oldest first; one withdrawn while it waits is reported as such.
func TestAsksBeyondTheParkedBudgetWaitOnDiskAndComeBackUnderTheirID(t *testing.T) {
	h := start(t, func(c *Config) { c.Budget.ParkedAsks = 2 })
	var ids []string
	for i := range 4 {
		ids = append(ids, fmt.Sprintf("1791279012345-pk%d-1", i))
		h.send(servedID, ids[i])
	}
	asks := h.arrivals(ids...)
	for i, a := range asks {
		if parked := h.in.Park(a.ID); parked != (i < 2) {
			t.Fatalf("ask %d of 4 parked = %v", i+1, parked)
		}
	}
	h.rec.WaitFor(t, "two deferred", deferring(2))

	if err := h.in.Respond(asks[0].ID, approve()); err != nil {
		t.Fatal(err)
	}
	again := h.rec.WaitForN(t, "the oldest deferred, again", func(ev Event) bool {
		a, ok := ev.(Arrived)
		return ok && a.ID == asks[2].ID
	}, 2)[1].(Arrived)
	if again.Request.ID != asks[2].Request.ID || again.Size != asks[2].Size {
		t.Fatalf("delivered again as %+v, first as %+v", again, asks[2])
	}
	if !h.in.Park(again.ID) {
		t.Fatal("a redelivered ask is parked for the room it was given")
	}
	if n := h.rec.Count(func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.ID == asks[3].ID }); n != 1 {
		t.Fatalf("the newest deferred ask was delivered %d times with no room for it", n)
	}

	// The child gives up on the one still deferred.
	if err := os.Remove(asks[3].Path); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "withdrawn while deferred", func(ev Event) bool { w, ok := ev.(Withdrawn); return ok && w.ID == asks[3].ID })
	h.rec.WaitFor(t, "none deferred", deferring(0))
}

// A deferred ask whose file was replaced meanwhile (a retry under the same
// name) is withdrawn, and the new file is a new ask.
func TestADeferredAskReplacedOnDiskIsANewAsk(t *testing.T) {
	h := start(t, func(c *Config) { c.Budget.ParkedAsks = 1 })
	ids := []string{"1791279012345-rp0-1", "1791279012345-rp1-1"}
	for _, id := range ids {
		h.send(servedID, id)
	}
	asks := h.arrivals(ids...)
	h.in.Park(asks[0].ID)
	if h.in.Park(asks[1].ID) {
		t.Fatal("parked beyond the budget")
	}
	h.replace(asks[1].Path, "1791279012345-rp2-1", "ls -la")
	if err := h.in.Respond(asks[0].ID, approve()); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "the deferred one withdrawn as replaced", func(ev Event) bool {
		w, ok := ev.(Withdrawn)
		return ok && w.ID == asks[1].ID && w.Replaced
	})
	fresh := h.rec.WaitFor(t, "the replacement", arrivedID("1791279012345-rp2-1")).(Arrived)
	if fresh.ID == asks[1].ID {
		t.Fatal("the replacement took the deferred ask's identity")
	}
}

// bigRequest is a request file of about size bytes.
func bigRequest(id, target string, size int) string {
	return strings.Replace(requestJSON(id, target), `"value":"ls"`, `"value":"`+strings.Repeat("x", size)+`"`, 1)
}

// Requests read and not yet answered are bounded in bytes over all
// sessions: beyond InFlightBytes files stay on disk, and are read once
// half of it is free.
func TestTheInFlightBytesAreBoundedOverAllSessions(t *testing.T) {
	const size = wire.MaxFileSize * 7 / 10
	var ids []string
	h := start(t, func(c *Config) {
		c.Sessions = []string{servedID, otherID}
		c.Budget.InFlightBytes = 2 * wire.MaxFileSize
		early := &harness{t: t, layout: c.Layout}
		for i, session := range []string{servedID, otherID, servedID, otherID} {
			ids = append(ids, fmt.Sprintf("1791279012345-ifb%d-1", i))
			early.writeRequest(session, ids[i]+".json", bigRequest(ids[i], session, size))
		}
	})
	arrived := isArrived
	held := h.rec.WaitForN(t, "two read", arrived, 2)
	// A third never fits while two are held: 1.4 MiB + 1 MiB > 2 MiB.
	h.eventually("reads held back by the global bound", func() bool { return h.in.waitingRoom })
	if n := h.rec.Count(arrived); n != 2 {
		t.Fatalf("%d requests of 0.7 MiB in flight under a 2 MiB bound", n)
	}
	for _, ev := range held {
		if err := h.in.Respond(ev.(Arrived).ID, approve()); err != nil {
			t.Fatal(err)
		}
	}
	h.rec.WaitForN(t, "the others, once room frees", arrived, len(ids))
}

// eventually waits up to testkit.WaitLimit for cond, read under the
// inbox's lock.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		h.in.mu.Lock()
		ok := cond()
		h.in.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// One session's unanswerable requests hold up only that session: its
// in-flight bytes are bounded on their own.
func TestOneSessionsInFlightBytesDoNotHoldUpAnother(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Sessions = []string{servedID, otherID}
		c.Budget.SessionInFlightBytes = 2 * wire.MaxFileSize
	})
	const size = wire.MaxFileSize * 7 / 10
	var ids []string
	for i := range 3 {
		ids = append(ids, fmt.Sprintf("1791279012345-sfb%d-1", i))
		h.writeRequest(servedID, ids[i]+".json", bigRequest(ids[i], servedID, size))
	}
	held := h.rec.WaitForN(t, "two of the session", func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.Session == servedID }, 2)
	h.eventually("the session held back by its bound", func() bool { return h.in.sessions[servedID].waiting })
	h.send(otherID, "1791279012345-sfb-other-1")
	h.rec.WaitFor(t, "the other session's request", arrivedID("1791279012345-sfb-other-1"))
	if n := h.rec.Count(func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.Session == servedID }); n != 2 {
		t.Fatalf("%d of the session's 0.7 MiB requests in flight under a 2 MiB bound", n)
	}
	if err := h.in.Respond(held[0].(Arrived).ID, approve()); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitForN(t, "the third, once room frees", func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.Session == servedID }, 3)
}

// Asks already read (parked or deferred) do not fill a scan's listing, so
// a session holding more of them than one scan lists still has its later
// files read, in poll mode too: a request the policy answers must not wait
// behind asks for a person (issue 8, scenario 1).
func TestRequestsBeyondOneListingOfWaitingAsksAreRead(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Poll = true
		c.Budget.ParkedAsks = 2
		c.MaxListed = 4
	})
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("1791279012345-ls%02d-1", i))
		h.send(servedID, ids[i])
	}
	for _, id := range ids {
		a := h.rec.WaitFor(t, "arrived "+id, arrivedID(id)).(Arrived)
		h.in.Park(a.ID)
	}
}

// Whatever happens to the asks (parked, deferred, postponed, judged again,
// answered, withdrawn, replaced, answered with their response dir gone),
// the budget's counts return to zero once every file is gone: nothing
// leaks up or goes negative.
func TestTheBudgetCountsReturnToZero(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Poll = true
		c.Budget.ParkedAsks = 3
		c.Budget.InFlightBytes = 3 * wire.MaxFileSize
		c.Sessions = []string{servedID, otherID}
	})
	rng := rand.New(rand.NewPCG(8, 8))
	sessions := []string{servedID, otherID}
	seen := 0
	for round := range 200 {
		session := sessions[rng.IntN(2)]
		h.send(session, fmt.Sprintf("1791279012345-bz%d-1", round))
		for _, ev := range h.rec.Snapshot()[seen:] {
			seen++
			a, ok := ev.(Arrived)
			if !ok {
				continue
			}
			switch rng.IntN(7) {
			case 0, 1:
				h.in.Park(a.ID)
			case 2:
				_ = h.in.Respond(a.ID, approve())
			case 3:
				h.in.Postpone(a.ID)
			case 4:
				_ = os.Remove(a.Path)
			case 5:
				h.replace(a.Path, a.Request.ID, "ls -la")
			case 6:
				h.in.Park(a.ID)
				h.in.Rejudge()
			}
		}
	}
	for _, session := range sessions {
		if err := os.RemoveAll(h.layout.RequestsDir(session)); err != nil {
			t.Fatal(err)
		}
		if err := safefs.MkdirPrivate(h.layout.RequestsDir(session)); err != nil {
			t.Fatal(err)
		}
	}
	h.eventually("every count back to zero", func() bool {
		for _, s := range h.in.sessions {
			if s.flight.Count() != 0 || s.flight.Bytes() != 0 || s.deferred.Count() != 0 {
				return false
			}
		}
		return h.in.parked.Count() == 0 && h.in.deferred.Count() == 0 && h.in.rejudging == 0 && h.in.postponed == 0 && h.in.parked.Bytes() == 0 &&
			h.in.flight.Count() == 0 && h.in.flight.Bytes() == 0 && len(h.in.byID) == 0 && len(h.in.inflight) == 0 && len(h.in.byReq) == 0
	})
}

// One session's flood of asks for a person stops only its own reading at
// its share of the deferred cap: another session's requests are still
// read (and so answered automatically).
func TestOneSessionsDeferredAsksDoNotStopAnother(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Sessions = []string{servedID, otherID}
		c.Budget.ParkedAsks, c.Budget.SessionDeferredAsks = 1, 2
	})
	inServed := func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.Session == servedID }
	var ids []string
	for i := range 3 {
		ids = append(ids, fmt.Sprintf("1791279012345-sdc%d-1", i))
		h.send(servedID, ids[i])
	}
	for i, a := range h.arrivals(ids...) {
		if parked := h.in.Park(a.ID); parked != (i == 0) {
			t.Fatalf("ask %d parked = %v", i+1, parked)
		}
	}
	// Two more of the session's files are not read: its share is used.
	h.send(servedID, "1791279012345-sdc3-1")
	h.send(servedID, "1791279012345-sdc4-1")
	h.send(otherID, "1791279012345-sdc-other-1")
	h.rec.WaitFor(t, "the other session's request", arrivedID("1791279012345-sdc-other-1"))
	if n := h.rec.Count(inServed); n != 3 {
		t.Fatalf("%d of the session's asks read beyond its deferred share", n)
	}
	// Room for one: the oldest deferred is shown, and the session reads on.
	first := h.rec.Filter(inServed)[0].(Arrived)
	if err := h.in.Respond(first.ID, approve()); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "a file read once the share has room", arrivedID("1791279012345-sdc3-1"))
}

// Directories named *.json (which permtui does not remove) are counted and
// reported as one line, never remembered one by one, and never fill a
// listing: a request among any number of them is read, in poll mode too.
func TestJunkDirectoriesNeitherHideRequestsNorTakeMemoryEach(t *testing.T) {
	const junk = 40
	h := start(t, func(c *Config) {
		c.Poll = true
		c.MaxListed = 4
		early := &harness{t: t, layout: c.Layout}
		early.send(servedID, "1791279012345-jd-0") // makes requests/
		for i := range junk {
			if err := os.Mkdir(filepath.Join(c.Layout.RequestsDir(servedID), fmt.Sprintf("junk-%03d.json", i)), 0o700); err != nil {
				t.Fatal(err)
			}
		}
	})
	h.rec.WaitFor(t, "the request among the directories", arrivedID("1791279012345-jd-0"))
	h.send(servedID, "1791279012345-jd-1")
	h.rec.WaitFor(t, "a later request", arrivedID("1791279012345-jd-1"))
	h.rec.WaitFor(t, "one report of the directories", func(ev Event) bool {
		i, ok := ev.(Invalid)
		return ok && strings.Contains(i.Reason, fmt.Sprintf("%d directories named *.json", junk))
	})
	if n := h.rec.Count(func(ev Event) bool { _, ok := ev.(Invalid); return ok }); n != 1 {
		t.Fatalf("%d reports for %d directories", n, junk)
	}
	h.in.mu.Lock()
	remembered := len(h.in.reported)
	h.in.mu.Unlock()
	if remembered != 0 {
		t.Fatalf("%d directories remembered one by one", remembered)
	}
}

// A change of the number waiting on disk that comes within the spacing of
// the last report is still reported once the spacing is over, with nothing
// else happening meanwhile (no event, no tick: the test's rescan is an hour).
func TestASpacedDeferringReportIsStillMade(t *testing.T) {
	h := start(t, func(c *Config) { c.Budget.ParkedAsks = 2 })
	var ids []string
	for i := range 4 {
		ids = append(ids, fmt.Sprintf("1791279012345-sp%d-1", i))
		h.send(servedID, ids[i])
	}
	asks := h.arrivals(ids...)
	for _, a := range asks[:3] {
		h.in.Park(a.ID)
	}
	h.rec.WaitFor(t, "one deferred", deferring(1))
	h.in.Park(asks[3].ID)
	h.rec.WaitFor(t, "two deferred, after the spacing", deferring(2))
}

// heldDeferral starts an inbox whose clock stands still, so a change of
// the number deferred is never due by time, with a parked budget of one:
// one ask parked, one deferred (reported), and deferred-1 more deferred,
// their count held by the spacing.
func heldDeferral(t *testing.T, deferred int) (*harness, []Arrived) {
	t.Helper()
	at := time.Unix(1_791_279_012, 0)
	h := start(t, func(c *Config) {
		c.Budget.ParkedAsks = 1
		c.Now = func() time.Time { return at }
	})
	var ids []string
	for i := range deferred + 1 {
		ids = append(ids, fmt.Sprintf("1791279012345-hd%d-1", i))
		h.send(servedID, ids[i])
	}
	asks := h.arrivals(ids...)
	h.in.Park(asks[0].ID)
	h.in.Park(asks[1].ID)
	h.rec.WaitFor(t, "one deferred", deferring(1))
	for _, a := range asks[2:] {
		h.in.Park(a.ID)
	}
	return h, asks
}

// delivery waits for the nth delivery of id.
func (h *harness) delivery(id AskID, n int) Arrived {
	h.t.Helper()
	return h.rec.WaitForN(h.t, "delivered again", func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.ID == id }, n)[n-1].(Arrived)
}

// deferringReports waits until none is deferred and returns every number
// reported.
func (h *harness) deferringReports() []int {
	h.t.Helper()
	h.rec.WaitFor(h.t, "none deferred", deferring(0))
	var counts []int
	for _, ev := range h.rec.Filter(func(ev Event) bool { _, ok := ev.(Deferring); return ok }) {
		counts = append(counts, ev.(Deferring).Waiting)
	}
	return counts
}

// A change that has the deferred asks judged again (a policy, grants or
// session denies) first reports how many wait, when the spacing held that
// count back: once they are released the last count before none is the
// one released, where it was an older one (headless printed "1 ask for a
// person waits" just before "recovered" when three were answered).
func TestARejudgeReportsTheCountItReleases(t *testing.T) {
	h, asks := heldDeferral(t, 3)
	h.in.Rejudge()
	for _, a := range asks[1:] {
		if err := h.in.Respond(h.delivery(a.ID, 2).ID, approve()); err != nil {
			t.Fatal(err)
		}
	}
	if counts := h.deferringReports(); !slices.Equal(counts, []int{1, 3, 0}) {
		t.Fatalf("deferring reports %v, want [1 3 0]", counts)
	}
}

// Asks taken off the disk to be judged again still wait until they are
// judged: a change that leaves them for a person (Park defers them again)
// is no recovery, where the number fell to none while they were read and
// "recovered" was reported, then the same number again.
func TestAsksJudgedAgainStillCountAsWaiting(t *testing.T) {
	h, asks := heldDeferral(t, 2)
	h.in.Rejudge() // reported now (decision 0198)
	for _, a := range asks[1:] {
		if h.in.Park(h.delivery(a.ID, 2).ID) {
			t.Fatal("parked beyond the budget")
		}
	}
	// Room for one: each answer lets the oldest deferred ask in.
	for i, a := range asks {
		if i > 0 {
			h.delivery(a.ID, 3)
			h.in.Park(a.ID)
		}
		if err := h.in.Respond(a.ID, approve()); err != nil {
			t.Fatal(err)
		}
	}
	if counts := h.deferringReports(); !slices.Equal(counts, []int{1, 2, 0}) {
		t.Fatalf("deferring reports %v, want [1 2 0]", counts)
	}
}
