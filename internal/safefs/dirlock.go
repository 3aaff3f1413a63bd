package safefs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// flock takes an exclusive flock on the open directory; how adds
// unix.LOCK_NB not to wait, and then held is false when another open
// description holds it. The kernel drops the lock when the directory is
// closed or the process dies, so a crashed holder never leaves it behind.
func (d *Dir) flock(how int) (held bool, err error) {
	for {
		err := unix.Flock(d.fd, unix.LOCK_EX|how)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, unix.EINTR): // a signal during the wait: wait again
			return false, &os.PathError{Op: "flock", Path: d.path, Err: err}
		}
	}
}

// Lock takes an exclusive flock on the open directory, waiting for another
// holder to release it; Close releases it.
func (d *Dir) Lock() error {
	_, err := d.flock(0)
	return err
}

// lockPoll is how often LockWait tries again.
const lockPoll = 20 * time.Millisecond

// LockWait takes the exclusive flock, trying again until wait has passed.
// Then it fails naming the holder, when /proc/locks shows one.
func (d *Dir) LockWait(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		ok, err := d.flock(unix.LOCK_NB)
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is locked by %s (waited %s)", d.path, d.holder(), wait)
		}
		time.Sleep(lockPoll)
	}
}

// holder names the process that holds a flock on the directory, from
// /proc/locks ("1: FLOCK ADVISORY WRITE <pid> <maj>:<min>:<inode> 0 EOF").
func (d *Dir) holder() string {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return "another process"
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return "another process"
	}
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino) // Dev is narrower on macOS, which has no /proc/locks
	for _, line := range strings.Split(string(locks), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != id {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + f[4] + "/cmdline")
		return fmt.Sprintf("process %s (%s)", f[4], strconv.Quote(strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))))
	}
	return "another process"
}
