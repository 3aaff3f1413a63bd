package inbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// swapForSymlink replaces dir by a symlink to outside, as a hostile child
// could at any moment; the real directory moves beside it.
func swapForSymlink(t *testing.T, dir, outside string) string {
	t.Helper()
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	return moved
}

func mustExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestRequestsDirectorySwappedForASymlinkMidScanLeadsNothingOutside(t *testing.T) {
	outside := t.TempDir()
	for _, name := range []string{"a.json", "b.json"} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte("not a request"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var reqDir string
	h := startHeld(t, func(c *Config) {
		c.Poll, c.PollRescan = true, time.Hour // one scan only
		early := &harness{t: t, layout: c.Layout}
		early.writeRequest(servedID, "a.json", "broken")
		early.writeRequest(servedID, "b.json", "broken too")
		reqDir = c.Layout.RequestsDir(servedID)
	})
	select {
	case ev := <-h.in.events:
		if _, ok := ev.(Serving); !ok {
			t.Fatalf("first event %#v, want Serving", ev)
		}
	case <-time.After(testkit.WaitLimit):
		t.Fatal("not serving")
	}
	// The scan refuses one file, then waits to report it: that is the
	// moment between listing and the other file.
	first, second := "", ""
	h.eventually("one file refused", func() bool {
		for _, pair := range [][2]string{{"a.json", "b.json"}, {"b.json", "a.json"}} {
			if _, err := os.Lstat(filepath.Join(reqDir, pair[0])); errors.Is(err, os.ErrNotExist) {
				first, second = pair[0], pair[1]
				return true
			}
		}
		return false
	})
	swapForSymlink(t, reqDir, outside)
	h.release()
	h.rec.WaitFor(t, first+" refused", invalidAt(filepath.Join(reqDir, first)))
	h.rec.WaitFor(t, second+" refused", invalidAt(filepath.Join(reqDir, second)))
	mustExist(t, filepath.Join(outside, second))
	gone(t, filepath.Join(reqDir+".moved", second))
}

func TestRespondAfterRequestsBecameASymlinkWritesAndDeletesNothing(t *testing.T) {
	// The file name is chosen to match a file of the user's elsewhere. One
	// scan only, so nothing but Respond looks at the swapped directory.
	var path string
	h := start(t, func(c *Config) {
		c.Poll, c.PollRescan = true, time.Hour
		early := &harness{t: t, layout: c.Layout}
		path = early.writeRequest(servedID, "config.json", requestJSON("1791279012345-cf-1", servedID))
	})
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-cf-1")).(Arrived).ID
	outside := t.TempDir()
	victim := filepath.Join(outside, "config.json")
	if err := os.WriteFile(victim, []byte(`{"defaultPolicy":"deny"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	swapForSymlink(t, filepath.Dir(path), outside)
	if h.in.Present(id) {
		t.Error("Present through a symlinked requests/")
	}
	if err := h.in.Respond(id, approve()); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("Respond = %v, want ErrWithdrawn", err)
	}
	mustExist(t, victim)
	gone(t, h.layout.ResponsePath(servedID, "1791279012345-cf-1"))
}

func TestRespondToARequestReplacedByADirectoryRemovesNoDirectory(t *testing.T) {
	var path string
	h := start(t, func(c *Config) {
		c.Poll, c.PollRescan = true, time.Hour
		early := &harness{t: t, layout: c.Layout}
		path = early.send(servedID, "1791279012345-dir-1")
	})
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-dir-1")).(Arrived).ID
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := h.in.Respond(id, approve()); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("Respond = %v, want ErrWithdrawn", err)
	}
	if st, err := os.Lstat(path); err != nil || !st.IsDir() {
		t.Fatalf("directory removed: %v", err)
	}
	gone(t, h.layout.ResponsePath(servedID, "1791279012345-dir-1"))
}

func TestAnswerForAnEarlierRequestNeverReachesALaterOneWithTheSameName(t *testing.T) {
	h := start(t, func(c *Config) { c.Poll = true })
	path := h.writeRequest(servedID, "same.json", requestJSON("1791279012345-old-1", servedID))
	oldID := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-old-1")).(Arrived).ID
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "withdrawn", func(ev Event) bool { w, ok := ev.(Withdrawn); return ok && w.Path == path })
	h.writeRequest(servedID, "same.json", requestJSON("1791279012345-new-1", servedID))
	newID := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-new-1")).(Arrived).ID
	if err := h.in.Respond(oldID, approve()); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("Respond with the old delivery = %v, want ErrNotInFlight", err)
	}
	mustExist(t, path)
	gone(t, h.layout.ResponsePath(servedID, "1791279012345-new-1"))
	if err := h.in.Respond(newID, approve()); err != nil {
		t.Fatal(err)
	}
	mustExist(t, h.layout.ResponsePath(servedID, "1791279012345-new-1"))
}

func TestHeartbeatIsNeverWrittenThroughASymlinkedServingDirectory(t *testing.T) {
	outside := t.TempDir()
	var layout wire.Layout
	h := start(t, func(c *Config) {
		layout = c.Layout
		if err := safefs.MkdirPrivate(c.Layout.Root); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, c.Layout.ServingDir()); err != nil {
			t.Fatal(err)
		}
	})
	h.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	// A request round trip proves the scan and heartbeat loops ran.
	h.send(servedID, "1791279012399-mark-1")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-1"))
	h.shutdown()
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("heartbeat written outside the inbox: %v", entries)
	}
	if st, err := os.Lstat(layout.ServingDir()); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("serving/ symlink changed: %v", err)
	}
}

func TestAFloodOfRequestsWaitsOnDiskBeyondTheInFlightBound(t *testing.T) {
	const laterID = "0198c3a4-ffff-7e8f-9a0b-1c2d3e4f5a6b" // scanned after servedID
	ids := make([]string, maxInFlight+1)
	h := start(t, func(c *Config) {
		c.Poll, c.PollRescan, c.Sessions = true, time.Hour, []string{servedID, laterID}
		early := &harness{t: t, layout: c.Layout}
		for i := range ids {
			ids[i] = fmt.Sprintf("1791279012345-fl%04d-1", i)
			early.send(servedID, ids[i])
		}
		early.send(laterID, "1791279012399-mark-1")
	})
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-1"))
	inServed := func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.Session == servedID }
	if n := h.rec.Count(inServed); n != maxInFlight {
		t.Fatalf("%d delivered, want %d", n, maxInFlight)
	}
	last := ids[maxInFlight]
	mustExist(t, h.layout.RequestPath(servedID, last))
	first := h.rec.WaitFor(t, "first", arrivedID(ids[0])).(Arrived)
	if err := h.in.Respond(first.ID, approve()); err != nil {
		t.Fatal(err)
	}
	h.in.mu.Lock()
	h.in.scanAll = true // a full scan, as the safety net's would
	h.in.mu.Unlock()
	h.in.wake()
	h.rec.WaitFor(t, "the one left waiting", arrivedID(last))
}

func TestDiscoveryServesAtMostMaxDiscoveredSessions(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Sessions, c.MaxDiscovered = nil, 2
		c.Poll, c.PollRescan = true, time.Hour
		early := &harness{t: t, layout: c.Layout}
		early.send("s1", "1791279012345-s1-1")
		early.send("s3", "1791279012345-s3-1")
		early.send("s2", "1791279012345-s2-1") // scanned last of the served
	})
	h.rec.WaitFor(t, "s2 arrival", arrivedID("1791279012345-s2-1"))
	for _, ev := range h.rec.Snapshot() {
		if s, ok := ev.(Serving); ok && s.Session == "s3" {
			t.Fatal("served a session beyond the bound")
		}
	}
	if h.rec.Count(arrivedID("1791279012345-s3-1")) != 0 {
		t.Fatal("delivered a request of an unserved session")
	}
	mustExist(t, h.layout.RequestPath("s3", "1791279012345-s3-1"))
	gone(t, h.layout.HeartbeatPath("s3"))
}

func TestASymlinkedSessionsDirectoryIsNotFollowed(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, wire.EncodeSegment(servedID), "requests", "1791279012345-sl-1.json")
	if err := safefs.MkdirPrivate(filepath.Dir(victim)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte(requestJSON("1791279012345-sl-1", servedID)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, discover := range []bool{false, true} {
		h := start(t, func(c *Config) {
			c.Poll = true
			if discover {
				c.Sessions = nil
			}
			if err := safefs.MkdirPrivate(c.Layout.Root); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, c.Layout.SessionsDir()); err != nil {
				t.Fatal(err)
			}
		})
		if !discover {
			ev := h.rec.WaitFor(t, "refused session root", invalidAt(h.layout.SessionDir(servedID))).(Invalid)
			// The reason names the component that is the symlink.
			if !strings.HasPrefix(ev.Reason, h.layout.SessionsDir()+": ") {
				t.Errorf("reason %q does not name sessions/", ev.Reason)
			}
		}
		h.shutdown()
		mustExist(t, victim)
		if n := h.rec.Count(arrivedID("1791279012345-sl-1")); n != 0 {
			t.Fatalf("discover=%v: delivered a request behind a symlinked sessions/", discover)
		}
	}
}
