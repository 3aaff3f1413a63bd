package inbox

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// A response to the longest id the wire allows still fits, temp name included,
// in one file name.
func TestTheLongestValidIDCanBeAnswered(t *testing.T) {
	long := strings.Repeat("7", wire.MaxIDLength)
	if !wire.ValidID(long) || wire.ValidID(long+"7") {
		t.Fatal("wire.MaxIDLength is not the bound")
	}
	d, err := safefs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The longest temp name: Linux pids have up to 7 digits, ms 13, the
	// counter up to 20.
	if n := len(long + ".json.4194304.1791279012345.18446744073709551615.tmp"); n > 255 {
		t.Fatalf("temp name of %d bytes", n)
	}
	if err := d.WriteFileAtomic(long+".json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
}

// A child's cleanup that removes responses/ while the inbox still keeps it
// open (the removal not yet seen) costs one reopen, not the answer:
// Respond writes through the path opened again.
func TestRespondReopensAResponsesDirectoryAChildRemoved(t *testing.T) {
	h := startHeld(t, func(*Config) {})
	next := func(what string) Event {
		t.Helper()
		for {
			select {
			case ev := <-h.in.events:
				if _, firstLook := ev.(Scanned); !firstLook {
					return ev
				}
			case <-time.After(testkit.WaitLimit):
				t.Fatalf("no %s event", what)
				return nil
			}
		}
	}
	if ev, ok := next("serving").(Serving); !ok {
		t.Fatalf("first event %#v, want Serving", ev)
	}
	arrive := func(id string) AskID {
		t.Helper()
		h.send(servedID, id)
		a, ok := next("arrived " + id).(Arrived)
		if !ok || a.Request.ID != id {
			t.Fatalf("%#v, want the arrival of %s", a, id)
		}
		return a.ID
	}
	// The first answer creates responses/, which the inbox has seen by the
	// next arrival; the second answer opens it and keeps it open.
	if err := h.in.Respond(arrive("1791279012345-rm-1"), approve()); err != nil {
		t.Fatal(err)
	}
	second, third := arrive("1791279012345-rm-2"), arrive("1791279012345-rm-3")
	if err := h.in.Respond(second, approve()); err != nil {
		t.Fatal(err)
	}
	// The inbox waits to report this arrival, so it cannot see the removal.
	h.send(servedID, "1791279012345-rm-4")
	if err := os.RemoveAll(h.layout.ResponsesDir(servedID)); err != nil {
		t.Fatal(err)
	}
	if err := h.in.Respond(third, approve()); err != nil {
		t.Fatalf("Respond after a child removed responses/: %v", err)
	}
	mustExist(t, h.layout.ResponsePath(servedID, "1791279012345-rm-3"))
}

// Once Run has returned the inbox keeps no directory open: an answer
// written then (an exit denial) opens its directories and closes them.
func TestNoDirectoryStaysOpenAfterRun(t *testing.T) {
	h := start(t, nil)
	h.send(servedID, "1791279012345-ex-1")
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-ex-1")).(Arrived).ID
	h.shutdown()
	if err := h.in.Respond(id, approve()); err != nil {
		t.Fatal(err)
	}
	mustExist(t, h.layout.ResponsePath(servedID, "1791279012345-ex-1"))
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, h.layout.Root) {
			t.Errorf("descriptor %s still open on %s", fd.Name(), target)
		}
	}
}
