package safefs

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func openTestDir(t *testing.T) (*Dir, string) {
	t.Helper()
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, root
}

// One holder at a time; the holder's release removes the name, and the
// next one creates it again, 0600.
func TestAFileLockHasOneHolderAndItsReleaseRemovesTheName(t *testing.T) {
	d, root := openTestDir(t)
	a, err := d.TryLockFile("s.lock")
	if a == nil || err != nil {
		t.Fatalf("first TryLockFile = %v, %v", a, err)
	}
	if b, err := d.TryLockFile("s.lock"); b != nil || err != nil {
		t.Fatalf("second TryLockFile while held = %v, %v; want nil, nil", b, err)
	}
	a.Release()
	if _, err := os.Lstat(filepath.Join(root, "s.lock")); !os.IsNotExist(err) {
		t.Fatalf("after Release the name is still there: %v", err)
	}
	b, err := d.TryLockFile("s.lock")
	if b == nil || err != nil {
		t.Fatalf("TryLockFile after Release = %v, %v", b, err)
	}
	defer b.Release()
	fi, err := os.Lstat(filepath.Join(root, "s.lock"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v, %v; want mode 0600", fi, err)
	}
}

// The race the name check closes: a newcomer opened the file, the holder
// released it (removing the name), and the newcomer's flock then succeeds
// on a removed file. That lock excludes nobody, so it is not taken.
func TestALockOnAFileWhoseNameWasRemovedIsNotHeld(t *testing.T) {
	d, _ := openTestDir(t)
	a, err := d.TryLockFile("s.lock")
	if a == nil || err != nil {
		t.Fatalf("TryLockFile = %v, %v", a, err)
	}
	fd, err := unix.Openat(d.fd, "s.lock", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	l, moved, err := d.lockOpened(fd, "s.lock")
	if l != nil || !moved || err != nil {
		t.Fatalf("lockOpened on the removed file = %v, %v, %v; want nil, true, nil", l, moved, err)
	}
}

// A symlink at the name is never followed: it is refused, and its target
// is not created.
func TestAFileLockRefusesASymlink(t *testing.T) {
	d, root := openTestDir(t)
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(target, filepath.Join(root, "s.lock")); err != nil {
		t.Fatal(err)
	}
	if l, err := d.TryLockFile("s.lock"); l != nil || err == nil {
		t.Fatalf("TryLockFile through a symlink = %v, %v; want an error", l, err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("the symlink's target was created: %v", err)
	}
}

// A holder that went on without a lock releases it like any other.
func TestReleasingNoLockDoesNothing(t *testing.T) {
	var l *FileLock
	l.Release()
}

// The directory descriptors a lock and a Swap keep are never inherited by
// a program permtui starts.
func TestKeptDirectoryDescriptorsCloseOnExec(t *testing.T) {
	d, _ := openTestDir(t)
	l, err := d.TryLockFile("s.lock")
	if err != nil || l == nil {
		t.Fatalf("TryLockFile = %v, %v", l, err)
	}
	defer l.Release()
	s, err := d.NewSwap("hb.json", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for what, fd := range map[string]int{"lock": l.dir.fd, "swap": s.dir.fd} {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s's directory descriptor: flags %#x, %v; want FD_CLOEXEC", what, flags, err)
		}
	}
}
