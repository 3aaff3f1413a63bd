package safefs

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// PIDAlive is kill(pid, 0) as pi reads it: any error but EPERM means dead.
func PIDAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// PIDRunning is PIDAlive without the processes that have exited and wait
// for their parent to collect them: kill(pid, 0) still reaches such a
// zombie, but it holds no lock and writes nothing any more. Without /proc it
// is PIDAlive.
func PIDRunning(pid int) bool {
	return PIDAlive(pid) && !exited(pid)
}

// exited reads the state in /proc/<pid>/stat: Z (zombie) or X (dead). The
// state follows the command name, which is in parentheses and may hold any
// byte, so it is found after the last ')'.
func exited(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] == 'Z' || data[i+2] == 'X'
}
