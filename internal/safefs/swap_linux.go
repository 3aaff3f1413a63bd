package safefs

import "golang.org/x/sys/unix"

// exchange swaps the names a and b in the directory dirfd atomically.
func exchange(dirfd int, a, b string) error {
	return unix.Renameat2(dirfd, a, dirfd, b, unix.RENAME_EXCHANGE)
}
