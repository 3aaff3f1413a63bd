package inbox

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// Scenario 8 of issue 8: junk session directories fill the discovery cap; a
// real session with a request must still be served, saturation must be
// reported, and removing the junk must free the slots for later sessions.
func TestDiscoveryCannotBeExhaustedByJunkSessions(t *testing.T) {
	const max = 8
	h := start(t, func(c *Config) {
		c.Sessions, c.Poll, c.MaxDiscovered = nil, true, max
	})
	junk := make([]string, 0, 3*max)
	for i := range 3 * max {
		id := fmt.Sprintf("junk-%03d", i)
		junk = append(junk, id)
		if err := os.MkdirAll(h.layout.SessionDir(id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sat := h.rec.WaitFor(t, "saturated", func(ev Event) bool { s, ok := ev.(Saturated); return ok && s.Waiting == 2*max }).(Saturated)
	if sat.Max != max {
		t.Errorf("saturation report %+v", sat)
	}

	// A real root session created after the junk, with a request waiting.
	const real = "zz-real-root"
	h.send(real, "1791279012345-real-1")
	h.rec.WaitFor(t, "the real session's request", arrivedID("1791279012345-real-1"))

	// The junk goes away: its sessions are forgotten, saturation ends, and a
	// session created later (no request yet) is served at once.
	for _, id := range junk {
		if err := os.RemoveAll(h.layout.SessionDir(id)); err != nil {
			t.Fatal(err)
		}
	}
	h.rec.WaitFor(t, "saturation over", func(ev Event) bool { s, ok := ev.(Saturated); return ok && s.Waiting == 0 })
	if err := os.MkdirAll(h.layout.SessionDir("later-root"), 0o700); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "later session served", func(ev Event) bool { s, ok := ev.(Serving); return ok && s.Session == "later-root" })
}

// F8 in discovery mode: the child's cleanup removes the session root after
// every answer. The instance that serves it keeps it (its lock and its
// heartbeat) while the directory is gone, so the next ask is its again; a
// second discovering instance stands by each time the directory reappears.
func TestDiscoveryKeepsAServedSessionAcrossAChildsCleanup(t *testing.T) {
	pidA, pidB := liveProcess(t).Process.Pid, liveProcess(t).Process.Pid
	a := start(t, func(c *Config) { c.Sessions, c.PID, c.LockRecheck = nil, pidA, 10*time.Millisecond })
	path := a.send(servedID, "1791279012345-disc0-1")
	a.rec.WaitFor(t, "the first ask", arrivedID("1791279012345-disc0-1"))
	layout := a.layout
	b := start(t, func(c *Config) { c.Layout, c.Sessions, c.PID, c.LockRecheck = layout, nil, pidB, 10*time.Millisecond })
	b.rec.WaitFor(t, "standing by", func(ev Event) bool {
		e, ok := ev.(ServedElsewhere)
		return ok && e.Session == servedID && e.PID == pidA && e.Permtui
	})
	for round := 1; round <= 3; round++ {
		for _, p := range []string{path, layout.RequestsDir(servedID), layout.ResponsesDir(servedID), layout.SessionDir(servedID)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		// Any discovery pass that sees this new directory saw the removal.
		mark := fmt.Sprintf("0198c3a4-0000-7e8f-9a0b-00000000000%d", round)
		if err := os.MkdirAll(layout.SessionDir(mark), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, h := range []*harness{a, b} {
			h.rec.WaitFor(t, "a pass over "+mark, func(ev Event) bool {
				s, served := ev.(Serving)
				e, elsewhere := ev.(ServedElsewhere)
				return served && s.Session == mark || elsewhere && e.Session == mark
			})
		}
		if !a.in.served(servedID) {
			t.Fatalf("round %d: the holder let the session go with its directory", round)
		}
		id := fmt.Sprintf("1791279012345-disc%d-1", round)
		path = a.send(servedID, id)
		a.rec.WaitFor(t, "the next ask at the holder", arrivedID(id))
		b.in.recheckLocked()
		if b.in.served(servedID) {
			t.Fatalf("round %d: the second instance serves the session", round)
		}
	}
}
