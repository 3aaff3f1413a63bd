package safefs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrSwapUnsupported: the file system cannot exchange two names
// (renameat2 RENAME_EXCHANGE); publish with WriteFileAtomic instead.
var ErrSwapUnsupported = errors.New("the file system cannot exchange names")

// Swap republishes a small file again and again without allocating an inode
// (decision 0091): it keeps two files open, the one named name and a spare
// named <name>.<pid>.swap.tmp (a reader lists only *.json names). Publish
// writes the spare in one call and exchanges the two names atomically
// (renameat2 RENAME_EXCHANGE), so a reader that opens name sees the old
// record or the new one, never a partial one; then the files trade roles.
// A Swap holds its own descriptor of the directory, so the Dir may be closed.
type Swap struct {
	dir                *Dir // a duplicate of the descriptor it was made from
	name, spareN       string
	cur, spare         *os.File
	curIno, spareIno   uint64
	curSize, spareSize int // lengths written, so a shorter record truncates
}

// NewSwap creates both files with data (mode 0600) and publishes the first
// under name, replacing what is there.
func (d *Dir) NewSwap(name string, data []byte) (*Swap, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	fd, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: d.path, Err: err}
	}
	d = &Dir{fd: fd, path: d.path}
	s := &Swap{dir: d, name: name, spareN: name + "." + pid + ".swap.tmp", curSize: len(data), spareSize: len(data)}
	if s.cur, s.curIno, err = d.createFilled(s.spareN+".new", data); err == nil {
		s.spare, s.spareIno, err = d.createFilled(s.spareN, data)
	}
	if err == nil {
		err = retryTransient(func() error { return unix.Renameat(d.fd, s.spareN+".new", d.fd, name) })
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd, s.spareN+".new", 0)
		s.Close()
		return nil, fmt.Errorf("publish %s: %w", d.Join(name), err)
	}
	return s, nil
}

// createFilled creates name afresh (removing a leftover of ours) with data,
// and returns it open, with its inode.
func (d *Dir) createFilled(name string, data []byte) (*os.File, uint64, error) {
	_ = unix.Unlinkat(d.fd, name, 0)
	fd, err := unix.Openat(d.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, 0, &os.PathError{Op: "create", Path: d.Join(name), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Join(name))
	err = f.Chmod(0o600) // the umask may have narrowed it
	if err == nil {
		_, err = f.Write(data)
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Ino, nil
}

// Owned reports whether name still is the file this Swap published: no one
// replaced or removed it since. One fstatat, no read.
func (s *Swap) Owned() bool {
	var st unix.Stat_t
	err := unix.Fstatat(s.dir.fd, s.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil && st.Ino == s.curIno && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// Publish makes data the content of name: written into the spare, then the
// two names are exchanged. ErrSwapUnsupported means the file system cannot
// exchange; any error leaves name as it was.
func (s *Swap) Publish(data []byte) error {
	_, err := s.spare.WriteAt(data, 0)
	if err == nil && len(data) < s.spareSize {
		err = s.spare.Truncate(int64(len(data)))
	}
	if err != nil {
		return fmt.Errorf("publish %s: %w", s.dir.Join(s.name), err)
	}
	err = retryTransient(func() error { return exchange(s.dir.fd, s.spareN, s.name) })
	switch {
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return ErrSwapUnsupported
	case err != nil:
		return &os.PathError{Op: "exchange", Path: s.dir.Join(s.name), Err: err}
	}
	s.cur, s.spare = s.spare, s.cur
	s.curIno, s.spareIno = s.spareIno, s.curIno
	s.curSize, s.spareSize = len(data), s.curSize
	return nil
}

// Close closes both files and removes the spare. The published file stays.
func (s *Swap) Close() {
	for _, f := range []*os.File{s.cur, s.spare} {
		if f != nil {
			f.Close()
		}
	}
	if s.spare != nil {
		_ = unix.Unlinkat(s.dir.fd, s.spareN, 0)
	}
	s.dir.Close()
}
