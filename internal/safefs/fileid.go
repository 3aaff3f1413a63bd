package safefs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// FileID tells a file from another that later takes its name (deleted and
// recreated, or renamed over): the new one differs in inode or, when the
// inode number is reused, in its change time or size. Compare with ==.
type FileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

// FileID is the identity of the regular file name (not following a
// symlink); ErrNotRegular for anything else.
func (d *Dir) FileID(name string) (FileID, error) {
	if err := d.checkName(name); err != nil {
		return FileID{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return FileID{}, &os.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	if t := modeType(uint32(st.Mode)); !t.IsRegular() {
		return FileID{}, fmt.Errorf("%s: %w (%s)", d.Join(name), ErrNotRegular, t.Type())
	}
	return fileIDOf(&st), nil
}

// String is the identity as text, the same for as long as the file stays
// as it is (a relay names a delivery on the hub by it).
func (id FileID) String() string {
	return fmt.Sprintf("%d:%d:%d:%d:%d", id.dev, id.ino, id.size, id.mtime, id.ctime)
}

func fileIDOf(st *unix.Stat_t) FileID {
	return FileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
