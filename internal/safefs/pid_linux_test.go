package safefs

import (
	"os"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

// A zombie answers kill(pid, 0), as pi reads liveness, but is not running.
func TestPIDRunningExcludesZombies(t *testing.T) {
	if !PIDRunning(os.Getpid()) {
		t.Fatal("our own pid reads as not running")
	}
	pid := testkit.Zombie(t)
	if !PIDAlive(pid) {
		t.Fatalf("zombie %d reads as dead to kill(pid, 0)", pid)
	}
	if PIDRunning(pid) {
		t.Fatalf("zombie %d reads as running", pid)
	}
}
