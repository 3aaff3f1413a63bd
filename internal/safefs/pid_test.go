package safefs

import (
	"os"
	"os/exec"
	"testing"
)

func TestPIDAlive(t *testing.T) {
	if !PIDAlive(os.Getpid()) {
		t.Fatal("our own pid reads as dead")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	// Reaped, so the pid names no process (until the kernel reuses it, which
	// it does not do at once).
	if PIDAlive(cmd.Process.Pid) {
		t.Fatalf("reaped pid %d reads as alive", cmd.Process.Pid)
	}
}
