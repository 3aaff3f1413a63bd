package safefs

import (
	"errors"
	"syscall"
)

// PIDAlive is kill(pid, 0) as pi reads it: any error but EPERM means dead.
func PIDAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
