package testkit

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// Zombie starts a process that exits at once and is not collected until the
// test ends: its pid still answers kill(pid, 0), as a killed process's does
// until its parent waits for it.
func Zombie(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	var info unix.Siginfo
	// WNOWAIT: wait for the exit but leave the process uncollected.
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
