package testkit

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opens counts, from now on, how often each of files is opened (by this
// process or any other, as inotify sees it); read the counts with the
// function it returns, once the opens to count are done: inotify queues an
// event within the open call.
func Opens(t testing.TB, files ...string) func() map[string]int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	byWatch := map[int32]string{}
	for _, f := range files {
		// Closes too: inotify merges an event into an identical one still
		// unread, so two opens in a row would count once.
		wd, err := unix.InotifyAddWatch(fd, f, unix.IN_OPEN|unix.IN_CLOSE)
		if err != nil {
			t.Fatalf("watch %s: %v", f, err)
		}
		byWatch[int32(wd)] = f
	}
	counts := map[string]int{}
	return func() map[string]int {
		t.Helper()
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EAGAIN {
				return counts
			}
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
					t.Fatal("inotify queue overflowed")
				}
				if ev.Mask&unix.IN_OPEN != 0 {
					counts[byWatch[ev.Wd]]++
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}
