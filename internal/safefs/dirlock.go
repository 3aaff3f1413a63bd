package safefs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive flock on the open directory without waiting.
// It reports false when another open description holds it. The kernel drops
// the lock when the directory is closed or the process dies, so a crashed
// holder never leaves it behind.
func (d *Dir) TryLock() (bool, error) {
	err := unix.Flock(d.fd, unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	}
	return false, &os.PathError{Op: "flock", Path: d.path, Err: err}
}

// Lock takes an exclusive flock on the open directory, waiting for another
// holder to release it; Close releases it.
func (d *Dir) Lock() error {
	for {
		err := unix.Flock(d.fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return &os.PathError{Op: "flock", Path: d.path, Err: err}
			}
			return nil
		}
	}
}
