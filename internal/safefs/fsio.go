package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// pid names this process's temp files (os.Getpid is a syscall each time).
var pid = strconv.Itoa(os.Getpid())

// umaskNarrows: the umask takes read or write from a 0600 file's owner, so
// each written file is given 0600 explicitly. Read once from
// /proc/self/status (setting the umask to read it would race with files
// created meanwhile); where that cannot be read, always.
var umaskNarrows = readUmask()&0o600 != 0

func readUmask() uint32 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(m)
			}
		}
	}
	return 0o777
}

// WriteFileAtomic writes data to path atomically (see Dir.WriteFileAtomic).
// The parent directory is opened following symlinks: use it for the user's
// own paths; inside the inbox use a Dir opened without following them.
func WriteFileAtomic(path string, data []byte) error { return writePath(path, data, 0o600, false) }

// WriteFileSynced replaces file with data durably: WriteFileAtomic's temp
// file and rename, the file given mode and fsync'd before the rename, the
// directory fsync'd after it, so the rename survives a crash. A new file's
// directories are made 0700.
func WriteFileSynced(file string, data []byte, mode fs.FileMode) error {
	if err := MkdirPrivate(filepath.Dir(file)); err != nil {
		return err
	}
	return writePath(file, data, mode, true)
}

// writePath is Dir.writeNew, replacing, through the directory of path.
func writePath(path string, data []byte, mode fs.FileMode, durable bool) error {
	d, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	defer d.Close()
	return d.writeNew(filepath.Base(path), data, mode, durable, renameOver)
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
	defer unix.Close(fd)
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
	data, err := readUpTo(fd, st.Size, max)
	if err != nil {
		return nil, FileID{}, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(data)) > max {
		return nil, FileID{}, fmt.Errorf("%s: %w (grew past %d bytes)", path, ErrTooLarge, max)
	}
	return data, fileIDOf(&st), nil
}

// readUpTo reads fd to its end, or to one byte past max. A regular file
// read short is at its end, so a file of the size fstat gave takes one
// read.
func readUpTo(fd int, size, max int64) ([]byte, error) {
	buf := make([]byte, 0, min(size, max)+1)
	for int64(len(buf)) <= max {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), max+1-int64(len(buf)))))
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue // as os.File does: a signal is not a read error (FUSE, NFS)
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) < cap(buf) {
			return buf, nil
		}
	}
	return buf, nil
}

// OpenAppendPrivate opens path for appending and reading back (a log's
// torn tail), created 0600, without following a symlink or blocking on a
// FIFO. An existing file must be a
// regular file that no one else may read or write: permtui writes what it
// was told to keep private there, and must not widen another file with it.
func OpenAppendPrivate(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
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

// Within: path is root or under it, both clean and both absolute or both
// relative; the one test of containment for the project and agent dirs.
// Absolute ones (every ask's cwd against each project root) are compared
// by a prefix at a separator, 12 ns here, where filepath.Rel took 134–166
// ns a root on an allow's path (decision 0234, BenchmarkVerdictOutsideProject).
func Within(path, root string) bool {
	if filepath.IsAbs(path) && filepath.IsAbs(root) {
		rest, ok := strings.CutPrefix(path, root)
		return ok && (rest == "" || rest[0] == filepath.Separator || strings.HasSuffix(root, string(filepath.Separator)))
	}
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// RealPath is path made absolute (only cleaned when the working dir is
// unknown) and that with its links resolved; a path that does not exist
// whole is not resolved at all (filepath.EvalSymlinks), and real is abs.
func RealPath(path string) (abs, real string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path), filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return abs, real
	}
	return abs, abs
}
