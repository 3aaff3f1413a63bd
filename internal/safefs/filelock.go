package safefs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// FileLock is an exclusive flock on a file of its own, kept at its name
// while held. A lock on a directory others may remove and recreate is no
// lock: the holder keeps it on the removed inode and a newcomer takes the
// new one (decision 0232).
type FileLock struct {
	dir      *Dir // a duplicate of the descriptor it was taken in
	name     string
	fd       int
	dev, ino uint64
}

// lockRaces bounds how often TryLockFile follows a name that a releasing
// holder removed between our open and our flock.
const lockRaces = 3

// TryLockFile takes the exclusive lock on the file name in d, creating it
// (0600, never through a symlink) if missing. It returns nil and no error
// when another holder has it. The lock is held only once the locked file
// still is the one named name: a releasing holder removes the name, and a
// lock on a removed file excludes nobody.
func (d *Dir) TryLockFile(name string) (*FileLock, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	for range lockRaces {
		fd, err := unix.Openat(d.fd, name, unix.O_CREAT|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
		}
		l, moved, err := d.lockOpened(fd, name)
		if !moved {
			return l, err
		}
	}
	return nil, nil
}

// lockOpened flocks fd, opened as name, and keeps it when it still is the
// file at name. moved: the name no longer is that file, so the caller
// tries again. fd is closed unless it is held.
func (d *Dir) lockOpened(fd int, name string) (l *FileLock, moved bool, err error) {
	err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		_ = unix.Close(fd)
		return nil, false, nil
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = fmt.Errorf("%w (%s)", ErrNotRegular, modeType(uint32(st.Mode)).Type())
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, false, &os.PathError{Op: "lock", Path: d.Join(name), Err: err}
	}
	l = &FileLock{name: name, fd: fd, dev: uint64(st.Dev), ino: st.Ino} // Dev is narrower on macOS
	if !d.names(name, l) {
		_ = unix.Close(fd)
		return nil, true, nil
	}
	dup, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		_ = unix.Close(fd)
		return nil, false, &os.PathError{Op: "dup", Path: d.path, Err: err}
	}
	l.dir = &Dir{fd: dup, path: d.path}
	return l, false, nil
}

// names reports whether name in d is the file l holds.
func (d *Dir) names(name string, l *FileLock) bool {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil && uint64(st.Dev) == l.dev && st.Ino == l.ino
}

// Release removes the name while the lock is still held, if it still is
// our file, and then lets go: whoever opened the file meanwhile finds it
// removed once it gets the lock, and tries the name again. A nil lock (a
// holder that goes on without one) releases nothing.
func (l *FileLock) Release() {
	if l == nil {
		return
	}
	if l.dir.names(l.name, l) {
		_ = unix.Unlinkat(l.dir.fd, l.name, 0)
	}
	_ = unix.Close(l.fd)
	_ = l.dir.Close()
}
