package safefs

import "golang.org/x/sys/unix"

// exchange swaps the names a and b in the directory dirfd atomically.
func exchange(dirfd int, a, b string) error {
	return unix.Renameat2(dirfd, a, dirfd, b, unix.RENAME_EXCHANGE)
}

// publishNew renames tmp to name unless name exists (RENAME_NOREPLACE);
// a file system that cannot (NFS, older FUSE) gets the hard link instead.
func publishNew(dirfd int, tmp, name string) error {
	err := unix.Renameat2(dirfd, tmp, dirfd, name, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP {
		return linkNew(dirfd, tmp, name)
	}
	return err
}
