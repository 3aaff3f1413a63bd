package inbox

import (
	"os"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/testkit"
)

// A holder killed but not yet collected by its parent is a zombie: its lock
// is gone, yet its pid answers kill(pid, 0) and its record is fresh. A
// standby starting then serves at once; it used to take the record for pi's
// own node and wait ContentionRecheck (the crash test's takeovers of just
// over 2 s).
func TestAZombiesFreshRecordDoesNotBlockServing(t *testing.T) {
	pid := testkit.Zombie(t)
	h := start(t, func(c *Config) { writeHB(t, c.Layout, servedID, pid, time.Now()) })
	h.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	if got := readHB(t, h.layout.HeartbeatPath(servedID)); got.PID != os.Getpid() {
		t.Fatalf("heartbeat %+v", got)
	}
	if h.rec.Count(func(ev Event) bool { _, ok := ev.(ServedElsewhere); return ok }) != 0 {
		t.Fatal("reported served elsewhere")
	}
}
