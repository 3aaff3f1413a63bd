package safefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Errors of ReadRegularFile.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// Waits between attempts of a rename or mkdir that failed with a transient
// errno, as pi does from v32.0.2 (#914).
var transientRetryWaits = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}

// tempSeq tells apart temp files this process creates in the same millisecond.
var tempSeq atomic.Uint64

// WriteFileAtomic writes data to path atomically (see Dir.WriteFileAtomic).
// The parent directory is opened following symlinks: use it for the user's
// own paths; inside the inbox use a Dir opened without following them.
func WriteFileAtomic(path string, data []byte) error {
	d, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	defer d.Close()
	return d.WriteFileAtomic(filepath.Base(path), data)
}

// retryTransient runs op and retries it after 10, 20 and 30 ms while it fails
// with EPERM, EBUSY or EACCES; any other error is returned at once.
func retryTransient(op func() error) error {
	err := op()
	for _, wait := range transientRetryWaits {
		if !isTransient(err) {
			return err
		}
		time.Sleep(wait)
		err = op()
	}
	return err
}

func isTransient(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EACCES)
}

// MkdirPrivate is mkdir -p where every directory it creates gets mode 0700
// whatever the umask. Existing directories are left as they are.
func MkdirPrivate(path string) error {
	path = filepath.Clean(path)
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("mkdir %s: %w", path, syscall.ENOTDIR)
		}
		return nil
	}
	if parent := filepath.Dir(path); parent != path {
		if err := MkdirPrivate(parent); err != nil {
			return err
		}
	}
	err := retryTransient(func() error { return os.Mkdir(path, 0o700) })
	if errors.Is(err, os.ErrExist) {
		return nil // created concurrently, e.g. by a child
	}
	if err != nil {
		return err
	}
	return os.Chmod(path, 0o700)
}

// ReadRegularFile reads a regular file of at most max bytes. It opens with
// O_NOFOLLOW|O_NONBLOCK, so a symlink, FIFO or device is refused with
// ErrNotRegular without blocking on it or reading it. Inbox files are read
// this way: a child must not point permtui at anything outside the inbox.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	data, _, err := readRegular(unix.AT_FDCWD, path, path, max, unix.O_NOFOLLOW)
	return data, err
}

// ReadRegularFileFollow is ReadRegularFile for the user's own files (policy,
// agent files): a symlink is followed — dotfile managers keep config as links —
// but what it names must still be a regular file of at most max bytes.
func ReadRegularFileFollow(path string, max int64) ([]byte, error) {
	data, _, err := readRegular(unix.AT_FDCWD, path, path, max, 0)
	return data, err
}

// readRegular opens name relative to dirfd (unix.AT_FDCWD for a plain path)
// with O_NONBLOCK, so a FIFO never blocks, and checks it is a regular file
// within max bytes before reading. It also returns the identity of the file
// it read.
func readRegular(dirfd int, path, name string, max int64, extraFlags int) ([]byte, FileID, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|extraFlags, 0)
	if errors.Is(err, unix.ELOOP) && extraFlags&unix.O_NOFOLLOW != 0 {
		return nil, FileID{}, fmt.Errorf("%s: %w (symlink)", path, ErrNotRegular)
	}
	if err != nil {
		return nil, FileID{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, FileID{}, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if t := modeType(uint32(st.Mode)); !t.IsRegular() {
		return nil, FileID{}, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, t.Type())
	}
	if st.Size > max {
		return nil, FileID{}, fmt.Errorf("%s: %w (%d > %d bytes)", path, ErrTooLarge, st.Size, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, FileID{}, err
	}
	if int64(len(data)) > max {
		return nil, FileID{}, fmt.Errorf("%s: %w (grew past %d bytes)", path, ErrTooLarge, max)
	}
	return data, fileIDOf(&st), nil
}

// OpenAppendPrivate opens path for appending, created 0600, without
// following a symlink or blocking on a FIFO. An existing file must be a
// regular file that no one else may read or write: permtui writes what it
// was told to keep private there, and must not widen another file with it.
func OpenAppendPrivate(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s: %w (symlink)", path, ErrNotRegular)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if t := modeType(uint32(st.Mode)); !t.IsRegular() {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, t.Type())
	}
	if perm := st.Mode & 0o777; perm&0o077 != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: mode %04o lets others read or write it; chmod 600 it or name another file", path, perm)
	}
	return os.NewFile(uintptr(fd), path), nil
}
