package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// next returns the next Change; the generous deadline only keeps a broken
// watcher from hanging the run.
func next(t *testing.T, w *Watcher) Change {
	t.Helper()
	select {
	case c, ok := <-w.Changes():
		if !ok {
			t.Fatal("Changes closed")
		}
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no change")
		return Change{}
	}
}

// waitName reads Changes until one names path.
func waitName(t *testing.T, w *Watcher, path string) {
	t.Helper()
	for {
		c := next(t, w)
		if slices.ContainsFunc(c.Events, func(ev fsnotify.Event) bool { return ev.Name == path }) {
			return
		}
	}
}

// start runs a real watcher with the periodic rescan out of the way, and
// takes the first Change (always Lost).
func start(t *testing.T, paths ...string) *Watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := New(ctx, Config{Rescan: time.Hour}, paths...)
	t.Cleanup(func() { cancel(); <-w.Done() })
	if w.Polling() {
		t.Fatal("fsnotify unavailable")
	}
	if c := next(t, w); !c.Lost || c.Events != nil {
		t.Fatalf("first change %+v, want Lost: the consumer's first full look", c)
	}
	return w
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A directory that does not exist yet is watched through its nearest
// existing ancestor, and each level created is an event naming it.
func TestWatchesADirectoryCreatedLater(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "a", "b")
	w := start(t, b)
	if got := w.Add(b); got != root {
		t.Fatalf("Add(%s) watched %q, want the ancestor %s", b, got, root)
	}
	mkdir(t, a)
	waitName(t, w, a)
	w.Set(b) // the consumer re-syncs after looking
	mkdir(t, b)
	waitName(t, w, b)
	w.Set(b)
	f := filepath.Join(b, "f.json")
	write(t, f)
	waitName(t, w, f)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watched) != 1 || !w.watched[b] {
		t.Errorf("watched %v, want only %s: ancestors are dropped once the path exists", w.watched, b)
	}
	if got := w.fs.WatchList(); !slices.Equal(got, []string{b}) {
		t.Errorf("fsnotify watches %v, want only %s", got, b)
	}
}

// A directory deleted and recreated is a new directory: Set watches it
// again and its files are seen.
func TestWatchesARecreatedDirectory(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "d")
	mkdir(t, d)
	w := start(t, d)
	write(t, filepath.Join(d, "old"))
	waitName(t, w, filepath.Join(d, "old"))
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	w.Set(d) // d is gone: its parent is watched
	mkdir(t, d)
	waitName(t, w, d)
	w.Set(d)
	f := filepath.Join(d, "new")
	write(t, f)
	waitName(t, w, f)
}

// Files are watched through their directory.
func TestWatchesAFileThroughItsDirectory(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "config.json")
	write(t, f)
	w := start(t)
	if got := w.Add(f); got != root {
		t.Fatalf("Add(file) watched %q, want %s", got, root)
	}
	write(t, f)
	waitName(t, w, f)
}

// fake runs the loop on channels the test feeds: each send returns once the
// loop has taken the event, so what a Change holds is exact.
func fake(t *testing.T, cfg Config) (*Watcher, chan fsnotify.Event, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := newWatcher(cfg)
	events, errs := make(chan fsnotify.Event), make(chan error)
	go w.run(ctx, events, errs)
	t.Cleanup(func() { cancel(); <-w.Done() })
	if c := next(t, w); !c.Lost {
		t.Fatalf("first change %+v, want Lost", c)
	}
	return w, events, errs
}

// Events that arrive while the consumer is busy are one Change, in order;
// chmod-only events are dropped.
func TestBurstsAreCoalesced(t *testing.T) {
	w, events, _ := fake(t, Config{Rescan: time.Hour})
	var want []string
	for i := range 100 {
		name := filepath.Join("/in", string(rune('a'+i%26)), "f")
		events <- fsnotify.Event{Name: name, Op: fsnotify.Create}
		events <- fsnotify.Event{Name: name, Op: fsnotify.Chmod}
		want = append(want, name)
	}
	c := next(t, w)
	if c.Lost || c.Tick {
		t.Errorf("a burst within bounds asks for a rescan: %+v", c)
	}
	if got := c.Names(); !slices.Equal(got, want) {
		t.Errorf("one change carried %d events, want the 100 creates in order", len(got))
	}
}

// More events than a Change holds make it Lost: the consumer rescans.
func TestTooManyEventsAreLost(t *testing.T) {
	w, events, _ := fake(t, Config{Rescan: time.Hour, MaxEvents: 3})
	for range 4 {
		events <- fsnotify.Event{Name: "/in/f", Op: fsnotify.Write}
	}
	if c := next(t, w); !c.Lost || c.Events != nil {
		t.Errorf("change %+v, want Lost without events", c)
	}
}

// A watcher error (an overflow, say) is a Lost change; the loop goes on
// with its watches as they were, and later events arrive as before.
func TestAnErrorKeepsTheLoopAndItsWatches(t *testing.T) {
	dir := t.TempDir()
	w, events, errs := fake(t, Config{Rescan: time.Hour})
	w.watched[dir] = true // as Add would record it
	errs <- errors.New("queue overflow")
	if c := next(t, w); !c.Lost {
		t.Fatalf("after an error: %+v, want Lost", c)
	}
	events <- fsnotify.Event{Name: filepath.Join(dir, "f"), Op: fsnotify.Create}
	if c := next(t, w); c.Lost || len(c.Events) != 1 {
		t.Errorf("after recovering: %+v, want the one event", c)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.watched[dir] {
		t.Error("an error dropped a watch")
	}
}

// The periodic rescan is a Tick, coalesced with pending events.
func TestTheSafetyRescanTicks(t *testing.T) {
	w, _, _ := fake(t, Config{Rescan: time.Millisecond})
	if c := next(t, w); !c.Tick {
		t.Errorf("change %+v, want a Tick", c)
	}
}

// With Settle, a burst is held until it is quiet, then delivered once.
func TestSettleWaitsForQuiet(t *testing.T) {
	w, events, _ := fake(t, Config{Rescan: time.Hour, Quiet: time.Millisecond})
	for range 10 {
		events <- fsnotify.Event{Name: "/in/f", Op: fsnotify.Write}
	}
	if c := next(t, w); len(c.Events) != 10 {
		t.Errorf("settled change carried %d events, want 10", len(c.Events))
	}
}

// Polling needs no fsnotify: only ticks signal, and Add watches nothing.
func TestPolling(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := New(ctx, Config{Poll: true, Rescan: time.Millisecond}, t.TempDir())
	defer func() { cancel(); <-w.Done() }()
	if !w.Polling() || w.Add(t.TempDir()) != "" {
		t.Fatal("a polling watcher watches")
	}
	next(t, w) // the first look
	if c := next(t, w); !c.Tick {
		t.Errorf("poll change %+v, want a Tick", c)
	}
}

// Cancelling the context ends the loop and closes Changes.
func TestCancelClosesChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := New(ctx, Config{}, t.TempDir())
	cancel()
	<-w.Done()
	for range w.Changes() {
	}
}

// AddDir watches exactly the directory, says why it cannot, and Set leaves
// its watches alone.
func TestAddDirIsExactAndOutsideSet(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "missing")
	w := start(t, root)
	if err := w.AddDir(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("AddDir(missing) = %v, want not-exist (no ancestor in its place)", err)
	}
	d := filepath.Join(root, "d")
	mkdir(t, d)
	waitName(t, w, d)
	if err := w.AddDir(d); err != nil {
		t.Fatal(err)
	}
	w.Set(filepath.Join(root, "other")) // root stays watched as its ancestor
	f := filepath.Join(d, "f")
	write(t, f)
	waitName(t, w, f)
	w.Remove(d)
	g := filepath.Join(root, "g")
	write(t, filepath.Join(d, "after-remove"))
	write(t, g)
	for {
		c := next(t, w)
		if slices.ContainsFunc(c.Events, func(ev fsnotify.Event) bool { return ev.Name == filepath.Join(d, "after-remove") }) {
			t.Fatal("an event from a removed watch")
		}
		if slices.ContainsFunc(c.Events, func(ev fsnotify.Event) bool { return ev.Name == g }) {
			return
		}
	}
}
