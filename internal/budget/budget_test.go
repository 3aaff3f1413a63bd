package budget

import (
	"testing"
	"time"
)

// Each bound holds exactly at its limit: what reaches it fits, one more
// item or byte does not, and a refused reservation counts nothing.
func TestReserveStopsAtEachBound(t *testing.T) {
	b := Budget{Limit: Limit{Count: 3, Bytes: 100}}
	if !b.Reserve(60) || !b.Reserve(40) {
		t.Fatalf("100 bytes in two items refused: %v", b.String())
	}
	if b.Reserve(1) {
		t.Fatal("a byte past the bound was reserved")
	}
	if !b.Reserve(0) {
		t.Fatal("a third empty item refused")
	}
	if b.Reserve(0) {
		t.Fatal("a fourth item past the count bound was reserved")
	}
	if b.Count() != 3 || b.Bytes() != 100 {
		t.Fatalf("refusals were counted: %d items, %d bytes", b.Count(), b.Bytes())
	}
	b.Release(60)
	if b.Count() != 2 || b.Bytes() != 40 || !b.Reserve(60) {
		t.Fatalf("the released room was not free again: %v", b.String())
	}
}

// A zero field bounds nothing on its side, the other still holds.
func TestAZeroLimitBoundsNothing(t *testing.T) {
	bytesOnly := Budget{Limit: Limit{Bytes: 10}}
	for range 1000 {
		if !bytesOnly.Reserve(0) {
			t.Fatalf("a bytes-only budget refused an item at %d", bytesOnly.Count())
		}
	}
	if bytesOnly.Reserve(11) || bytesOnly.Full() || !bytesOnly.HalfFree() {
		t.Fatalf("bytes-only budget: %v, full %v", bytesOnly.String(), bytesOnly.Full())
	}
	countOnly := Budget{Limit: Limit{Count: 1}}
	if !countOnly.Reserve(1 << 40) {
		t.Fatal("a count-only budget refused a large item")
	}
	if !countOnly.Full() || countOnly.Reserve(0) {
		t.Fatal("a count-only budget took a second item")
	}
}

// Add counts beyond the bound (an item held on purpose, a size that
// changed), and the budget then refuses until enough is released.
func TestAddCountsBeyondTheBound(t *testing.T) {
	b := Budget{Limit: Limit{Count: 2, Bytes: 10}}
	b.Add(1, 25)
	if b.Fits(0, 0) || !b.Full() || b.HalfFree() {
		t.Fatalf("over the bound yet fits: %v", b.String())
	}
	b.Add(0, -20) // the item shrank
	if !b.Fits(1, 5) || b.Fits(1, 6) {
		t.Fatalf("after shrinking: %v", b.String())
	}
}

// Full and HalfFree at their edges.
func TestFullAndHalfFreeEdges(t *testing.T) {
	cases := []struct {
		count          int
		bytes          int64
		full, halfFree bool
	}{
		{0, 0, false, true},
		{2, 50, false, true},
		{3, 50, false, false},
		{2, 51, false, false},
		{4, 99, true, false},
		{1, 100, true, false},
	}
	for _, c := range cases {
		b := Budget{Limit: Limit{Count: 4, Bytes: 100}}
		b.Add(c.count, c.bytes)
		if b.Full() != c.full || b.HalfFree() != c.halfFree {
			t.Errorf("%d items, %d bytes of 4, 100: full %v halfFree %v, want %v %v",
				c.count, c.bytes, b.Full(), b.HalfFree(), c.full, c.halfFree)
		}
	}
}

func TestStringReportsUseAgainstTheBounds(t *testing.T) {
	b := Budget{Limit: Limit{Count: 1024, Bytes: 64 << 20}}
	b.Add(3, 3<<19)
	if got, want := b.String(), "3 of 1024, 1.5 of 64.0 MiB"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	u := Budget{}
	u.Add(7, 1<<20)
	if got, want := u.String(), "7, 1.0 MiB"; got != want {
		t.Errorf("unbounded String() = %q, want %q", got, want)
	}
}

// A report of what waits is due at once when waiting starts or ends or the
// flag changes, and otherwise at most every 5 s, the wait said.
func TestSpacingReportsStartsAndEndsAtOnceAndChangesSpaced(t *testing.T) {
	var s Spacing
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at   time.Duration
		n    int
		flag bool
		due  bool
		wait time.Duration
	}{
		{0, 0, false, false, 0}, // nothing waits, as before
		{0, 3, false, true, 0},  // waiting starts
		{time.Second, 4, false, false, 4 * time.Second},
		{time.Second, 4, true, true, 0}, // the flag changed
		{2 * time.Second, 9, true, false, 4 * time.Second},
		{7 * time.Second, 9, true, true, 0},  // spaced change, now due
		{7 * time.Second, 9, true, false, 0}, // nothing new
		{8 * time.Second, 0, true, true, 0},  // waiting ends
	}
	for i, st := range steps {
		due, wait := s.Due(st.n, st.flag, t0.Add(st.at), 5*time.Second)
		if due != st.due || wait != st.wait {
			t.Fatalf("step %d (%d waiting, flag %v at %v): due %v wait %v, want %v %v", i, st.n, st.flag, st.at, due, wait, st.due, st.wait)
		}
	}
}
