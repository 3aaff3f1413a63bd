//go:build !linux

package safefs

import "golang.org/x/sys/unix"

// exchange: only Linux's renameat2 is used; elsewhere Publish reports
// ErrSwapUnsupported and callers write with temp + rename.
func exchange(dirfd int, a, b string) error { return unix.ENOSYS }

// publishNew: without renameat2, a hard link never replaces name.
func publishNew(dirfd int, tmp, name string) error { return linkNew(dirfd, tmp, name) }
