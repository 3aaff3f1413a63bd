// Package budget counts what a holder keeps, in items and bytes, against a
// bound: the one idea behind the inbox's parked, deferred and in-flight
// bounds, the hub approver's shown asks and the console's diffs (decision
// 0195). A Budget has no lock: its holder's lock guards it.
package budget

import (
	"fmt"
	"time"
)

// Limit bounds items and bytes; a zero or negative field bounds nothing.
type Limit struct {
	Count int
	Bytes int64
}

// Budget is what is held now against Limit.
type Budget struct {
	Limit Limit
	count int
	bytes int64
}

// Fits reports whether n more items of size bytes in all fit.
func (b *Budget) Fits(n int, size int64) bool {
	return (b.Limit.Count <= 0 || b.count+n <= b.Limit.Count) &&
		(b.Limit.Bytes <= 0 || b.bytes+size <= b.Limit.Bytes)
}

// Reserve counts one item of size bytes if it fits, and reports whether it
// did.
func (b *Budget) Reserve(size int64) bool {
	if !b.Fits(1, size) {
		return false
	}
	b.Add(1, size)
	return true
}

// Release stops counting one item of size bytes.
func (b *Budget) Release(size int64) { b.Add(-1, -size) }

// Add counts n items and size bytes more (fewer when negative), whether
// they fit or not: for what is held beyond the bound on purpose, and for
// an item whose size changed.
func (b *Budget) Add(n int, size int64) {
	b.count += n
	b.bytes += size
}

// Full reports whether a bounded dimension is used up.
func (b *Budget) Full() bool { return !b.Fits(1, 1) }

// HalfFree reports whether at most half of each bound is used: holders wait
// for it before taking up waiting work, so a burst costs one pass per half
// rather than one per item freed.
func (b *Budget) HalfFree() bool {
	return (b.Limit.Count <= 0 || b.count <= b.Limit.Count/2) &&
		(b.Limit.Bytes <= 0 || b.bytes <= b.Limit.Bytes/2)
}

// Count is the number of items held.
func (b *Budget) Count() int { return b.count }

// Bytes is the number of bytes held.
func (b *Budget) Bytes() int64 { return b.bytes }

// String reports use against the bounds for log and status lines, as
// "3 of 1024, 1.5 of 64 MiB"; an unbounded dimension shows its use alone.
func (b *Budget) String() string {
	count := fmt.Sprint(b.count)
	if b.Limit.Count > 0 {
		count += fmt.Sprint(" of ", b.Limit.Count)
	}
	bytes := fmt.Sprintf("%.1f", mib(b.bytes))
	if b.Limit.Bytes > 0 {
		bytes += fmt.Sprintf(" of %.1f", mib(b.Limit.Bytes))
	}
	return count + ", " + bytes + " MiB"
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// Spacing spaces the reports of how much waits beyond a budget, so a burst
// is not a report per item: one is due at once when waiting starts or ends
// or the holder's flag changes (such as "names no longer kept"), and at
// most every so often while only the number changes. The zero value has
// reported nothing waiting.
type Spacing struct {
	n    int
	flag bool
	at   time.Time
}

// Due reports whether a report of n waiting, with flag, is due at now, a
// change of the number alone at most every every, and records it as made
// when it is; when it is not due only for its spacing, wait is how long
// until it is.
func (s *Spacing) Due(n int, flag bool, now time.Time, every time.Duration) (due bool, wait time.Duration) {
	if n == s.n && flag == s.flag {
		return false, 0
	}
	if flag == s.flag && (n > 0) == (s.n > 0) {
		if wait := every - now.Sub(s.at); wait > 0 {
			return false, wait
		}
	}
	s.n, s.flag, s.at = n, flag, now
	return true, 0
}
