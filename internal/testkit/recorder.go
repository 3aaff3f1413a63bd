package testkit

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"
)

// WaitLimit bounds every wait for something that should happen soon; it is a
// guard against hangs, not a timing assertion.
const WaitLimit = 20 * time.Second

// Recorder collects events delivered from other goroutines.
type Recorder[T any] struct {
	mu     sync.Mutex
	events []T
	signal chan struct{}
}

func NewRecorder[T any]() *Recorder[T] {
	return &Recorder[T]{signal: make(chan struct{}, 1)}
}

// Add records ev and wakes a waiter.
func (r *Recorder[T]) Add(ev T) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// Snapshot is a copy of the events so far, in order.
func (r *Recorder[T]) Snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.events...)
}

// WaitFor returns the first event matching pred, waiting up to WaitLimit.
func (r *Recorder[T]) WaitFor(t testing.TB, what string, pred func(T) bool) T {
	t.Helper()
	return r.WaitForN(t, what, pred, 1)[0]
}

// WaitForN returns the first n events matching pred, waiting up to
// WaitLimit for them.
func (r *Recorder[T]) WaitForN(t testing.TB, what string, pred func(T) bool, n int) []T {
	t.Helper()
	deadline := time.After(WaitLimit)
	for {
		if got := r.Filter(pred); len(got) >= n {
			return got[:n]
		}
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("no %s event; got %#v", what, r.Snapshot())
		}
	}
}

// Filter is the events so far that match pred, in order.
func (r *Recorder[T]) Filter(pred func(T) bool) []T {
	return slices.DeleteFunc(r.Snapshot(), func(ev T) bool { return !pred(ev) })
}

// Count is how many events so far match pred.
func (r *Recorder[T]) Count(pred func(T) bool) int { return len(r.Filter(pred)) }

// SyncBuffer is an io.Writer that goroutines and the test can share.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
