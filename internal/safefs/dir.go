package safefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNotDir: a path component inside the inbox is not a real directory (a
// symlink, a file, ...). Symlinks under the forwarding root are never followed.
var ErrNotDir = errors.New("not a directory (symlinks are not followed)")

// Dir is an open directory. Every operation on it is relative to the open
// descriptor (openat, unlinkat, renameat), so a child that swaps a directory
// of the inbox for a symlink after we opened it cannot redirect a read, a
// write or a delete: they still act on the directory we opened.
type Dir struct {
	fd   int
	path string // for messages only
}

// OpenDir opens base (followed if it is a symlink: it is the user's own
// forwarding root or state directory) and then each of names below it without
// following symlinks. A component that is not a real directory is ErrNotDir;
// a missing one is fs.ErrNotExist.
func OpenDir(base string, names ...string) (*Dir, error) {
	return openBelow(base, names, (*Dir).Open)
}

// OpenDirPrivate is OpenDir that creates missing components below base with
// mode 0700 (whatever the umask), like mkdir -p. base itself must exist.
func OpenDirPrivate(base string, names ...string) (*Dir, error) {
	return openBelow(base, names, (*Dir).OpenPrivate)
}

// openBelow opens base, then each of names in turn with open.
func openBelow(base string, names []string, open func(d *Dir, name string) (*Dir, error)) (*Dir, error) {
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: base, Err: err}
	}
	d := &Dir{fd: fd, path: base}
	for _, name := range names {
		sub, err := open(d, name)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = sub
	}
	return d, nil
}

// Path is the directory's path when it was opened.
func (d *Dir) Path() string { return d.path }

// Close releases the descriptor.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Join is the path of the entry name (one segment, as checkName allows) in
// d: the directory's clean path and the name, without cleaning again.
func (d *Dir) Join(name string) string {
	if strings.HasSuffix(d.path, string(filepath.Separator)) {
		return d.path + name
	}
	return d.path + string(filepath.Separator) + name
}

// checkName refuses anything but a single path segment.
func (d *Dir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return &os.PathError{Op: "open", Path: d.Join(name), Err: errors.New("not a single file name")}
	}
	return nil
}

// Open opens the subdirectory name without following a symlink.
func (d *Dir) Open(name string) (*Dir, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%s: %w", d.Join(name), ErrNotDir)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	return &Dir{fd: fd, path: d.Join(name)}, nil
}

// OpenPrivate opens the subdirectory name, creating it with mode 0700 if it
// is missing. An existing directory keeps its mode.
func (d *Dir) OpenPrivate(name string) (*Dir, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	err := retryTransient(func() error { return unix.Mkdirat(d.fd, name, 0o700) })
	created := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) { // EEXIST: there already, or a child made it
		return nil, &os.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
	}
	sub, err := d.Open(name)
	if err != nil || !created {
		return sub, err
	}
	// The umask may have narrowed the mode; make it exactly 0700.
	if err := unix.Fchmod(sub.fd, 0o700); err != nil {
		sub.Close()
		return nil, &os.PathError{Op: "chmod", Path: sub.path, Err: err}
	}
	return sub, nil
}

// List returns the entries of the directory whose names end in suffix, at
// most max of them, sorted by name; truncated reports that more were left
// unread. Entries skip reports true for (the caller knows them already, or
// has no use for their kind) are neither returned nor counted, so they
// cannot hide the others; skip may be nil. Memory stays bounded however
// large the directory is.
func (d *Dir) List(suffix string, max int, skip func(fs.DirEntry) bool) (entries []fs.DirEntry, truncated bool, err error) {
	// A fresh descriptor of the same directory: its own read offset.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	for {
		batch, err := f.ReadDir(256)
		for _, e := range batch {
			if !strings.HasSuffix(e.Name(), suffix) || skip != nil && skip(e) {
				continue
			}
			if len(entries) == max {
				truncated = true
				break
			}
			entries = append(entries, e)
		}
		if truncated || len(batch) == 0 || err != nil {
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, false, err
			}
			break
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, truncated, nil
}

// Mode is the type of the entry name (not following a symlink), or an error
// such as fs.ErrNotExist.
func (d *Dir) Mode(name string) (fs.FileMode, error) {
	if err := d.checkName(name); err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return modeType(uint32(st.Mode)), nil
}

func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// ReadFileID reads the regular file name of at most max bytes (see
// ReadRegularFile) and returns the identity of the file it read, so a later
// file under the same name can be told from it.
func (d *Dir) ReadFileID(name string, max int64) ([]byte, FileID, error) {
	if err := d.checkName(name); err != nil {
		return nil, FileID{}, err
	}
	return readRegular(d.fd, d.Join(name), name, max, unix.O_NOFOLLOW)
}

// Remove unlinks the entry name. It never removes a directory (unlike
// os.Remove, which falls back to rmdir) and never follows a symlink.
func (d *Dir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: d.Join(name), Err: err}
	}
	return nil
}

// WriteFileAtomic writes data to name the way pi does: a 0600 temp file
// <name>.<pid>.<unixms>.tmp beside it (never ending in .json, so readers
// ignore it), written in one call, then renamed over name. The final name is
// never written in place; on any failure the temp file is removed.
func (d *Dir) WriteFileAtomic(name string, data []byte) error {
	return d.writeNew(name, data, 0o600, false, renameOver)
}

// WriteFileNew is WriteFileAtomic that never replaces an existing name: the
// whole file appears under name only if nothing was there, else the error
// is fs.ErrExist and name keeps what it held.
func (d *Dir) WriteFileNew(name string, data []byte) error {
	return d.writeNew(name, data, 0o600, false, publishNew)
}

// WriteFileNewSynced is WriteFileNew made durable, as WriteFileSynced is.
func (d *Dir) WriteFileNewSynced(name string, data []byte) error {
	return d.writeNew(name, data, 0o600, true, publishNew)
}

// renameOver publishes tmp as name, replacing what name held.
func renameOver(dirfd int, tmp, name string) error {
	return unix.Renameat(dirfd, tmp, dirfd, name)
}

// linkNew publishes tmp as name only if name is free: a hard link fails
// with EEXIST instead of replacing. The temp name is then let go; one left
// by a failed unlink ends in .tmp, which readers ignore.
func linkNew(dirfd int, tmp, name string) error {
	if err := unix.Linkat(dirfd, tmp, dirfd, name, 0); err != nil {
		return err
	}
	_ = unix.Unlinkat(dirfd, tmp, 0)
	return nil
}

// writeNew writes data to a temp file beside name, given mode, and hands
// it to publish; on any failure the temp file is removed. durable: the file
// is fsync'd before it is published and the directory after, so the new
// name survives a crash.
func (d *Dir) writeNew(name string, data []byte, mode fs.FileMode, durable bool, publish func(dirfd int, tmp, name string) error) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	// Plain file descriptors: an os.File costs two more syscalls (its
	// poller probe) on every response written (issue 23).
	fd, tmp, err := d.createTemp(name)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", d.Join(name), err)
	}
	err = writeAll(fd, data)
	if err == nil && (mode != 0o600 || umaskNarrows) {
		// Created 0600, which the umask may have narrowed.
		err = unix.Fchmod(fd, uint32(mode.Perm()))
	}
	if err == nil && durable {
		err = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = retryTransient(func() error { return publish(d.fd, tmp, name) })
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("atomic write %s: %w", d.Join(name), err)
	}
	if !durable {
		return nil
	}
	// EINVAL: a file system that cannot sync a directory.
	if err := unix.Fsync(d.fd); err != nil && !errors.Is(err, unix.EINVAL) {
		return &os.PathError{Op: "fsync", Path: d.path, Err: err}
	}
	return nil
}

// writeAll writes data to fd, however many calls it takes.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue // as os.File does: a signal is not a write error
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (d *Dir) createTemp(name string) (int, string, error) {
	base := name + "." + pid + "." + strconv.FormatInt(time.Now().UnixMilli(), 10)
	tmp := base + ".tmp"
	for attempt := 0; ; attempt++ {
		fd, err := unix.Openat(d.fd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return fd, tmp, nil
		}
		if !errors.Is(err, unix.EEXIST) || attempt == 8 {
			return -1, "", &os.PathError{Op: "create", Path: d.Join(tmp), Err: err}
		}
		tmp = base + "." + strconv.FormatUint(tempSeq.Add(1), 10) + ".tmp"
	}
}
