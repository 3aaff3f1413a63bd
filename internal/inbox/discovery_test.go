package inbox

import (
	"fmt"
	"os"
	"testing"
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
