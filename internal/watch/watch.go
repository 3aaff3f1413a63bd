// Package watch is permtui's one directory-watch loop, shared by the inbox
// and the policy hot reload (decision 0003). It watches directories, or the
// nearest existing ancestor of one that does not exist yet, coalesces
// fsnotify events into Changes, and adds a periodic safety rescan for
// whatever events miss. The consumer reads the state itself: a Change says
// what moved (the event names, when nothing was lost) and whether to look at
// everything.
//
// The watches are in place before the first Change is delivered, and the
// first Change is a rescan, so a consumer that reads its state on it misses
// nothing created in between (viper's WatchConfig and Prometheus's file
// discovery order it the same way).
package watch

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Change is what happened since the last Change the consumer received.
type Change struct {
	// Events in arrival order (Chmod dropped), nil when Lost.
	Events []fsnotify.Event
	// Lost: events may be missing (the first Change, a watcher error or
	// overflow, more events than a Change holds): look at everything.
	Lost bool
	// Tick: the periodic safety rescan is due.
	Tick bool
}

// Names lists the paths the events name, in arrival order (repeats kept),
// for a consumer that needs no ops.
func (c Change) Names() []string {
	names := make([]string, len(c.Events))
	for i, ev := range c.Events {
		names[i] = ev.Name
	}
	return names
}

// Config tunes a Watcher. Zero values take the defaults.
type Config struct {
	// Rescan is the period of the safety rescan (default 3 s).
	Rescan time.Duration
	// PollRescan is the period when polling, the only signal then (default
	// Rescan).
	PollRescan time.Duration
	// Quiet delays a Change until no event arrived for this long, so a
	// burst of writes is one Change. Zero delivers at once; events that
	// arrive while the consumer is busy are still coalesced.
	Quiet time.Duration
	// Poll uses no fsnotify (network filesystems); New also falls back to
	// it when fsnotify cannot start.
	Poll bool
	// MaxEvents bounds the events one Change carries (default 4096); beyond
	// it the Change is Lost instead.
	MaxEvents int
	Logger    *slog.Logger
}

const (
	defaultRescan    = 3 * time.Second
	defaultMaxEvents = 4096
)

// Watcher is one watch loop. Its methods are safe for concurrent use.
type Watcher struct {
	cfg     Config
	fs      *fsnotify.Watcher // nil when polling
	changes chan Change
	done    chan struct{}

	mu      sync.Mutex
	watched map[string]bool // directories under watch
}

// New starts a watcher of paths (each as Add does). It runs until ctx is
// done, then closes Changes.
func New(ctx context.Context, cfg Config, paths ...string) *Watcher {
	w := newWatcher(cfg)
	if !w.cfg.Poll {
		fw, err := fsnotify.NewBufferedWatcher(uint(w.cfg.MaxEvents))
		if err != nil {
			w.cfg.Logger.Warn("fsnotify unavailable; polling", "err", err)
		} else {
			w.fs = fw
		}
	}
	for _, p := range paths {
		w.Add(p)
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.fs != nil {
		events, errs = w.fs.Events, w.fs.Errors
	}
	go w.run(ctx, events, errs)
	return w
}

func newWatcher(cfg Config) *Watcher {
	if cfg.Rescan <= 0 {
		cfg.Rescan = defaultRescan
	}
	if cfg.PollRescan <= 0 {
		cfg.PollRescan = cfg.Rescan
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = defaultMaxEvents
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	return &Watcher{cfg: cfg, changes: make(chan Change), done: make(chan struct{}), watched: map[string]bool{}}
}

// Changes delivers the coalesced changes; it is closed when the loop ends.
func (w *Watcher) Changes() <-chan Change { return w.changes }

// Polling reports whether no fsnotify watch runs: only rescans signal.
func (w *Watcher) Polling() bool { return w.fs == nil }

// Done is closed when the loop has ended and released its watches.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Add watches path if it is a directory, else its nearest existing ancestor
// directory, so that its creation is an event. It returns the directory
// watched ("" when none could be). A directory that is there already is
// added again: one deleted and recreated since is a new directory whose
// old watch died with it (adding a live watch is a no-op).
func (w *Watcher) Add(path string) string {
	if w.fs == nil {
		return ""
	}
	for dir := filepath.Clean(path); ; {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && w.fs.Add(dir) == nil {
			w.mu.Lock()
			w.watched[dir] = true
			w.mu.Unlock()
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// AddDir watches exactly dir, with no ancestor in its place, and reports
// why it could not (the directory is gone, or no inotify watch is left):
// for directories a consumer finds itself and keeps track of. Set leaves
// these watches alone.
func (w *Watcher) AddDir(dir string) error {
	if w.fs == nil {
		return nil
	}
	return w.fs.Add(dir)
}

// Remove drops a watch AddDir placed; one whose directory was removed is
// gone already, which is no error worth reporting.
func (w *Watcher) Remove(dir string) {
	if w.fs != nil {
		_ = w.fs.Remove(dir)
	}
}

// Set makes the directories watched through Add and Set exactly those Add
// picks for paths: ancestors watched only while a path was missing are
// dropped once it exists.
func (w *Watcher) Set(paths ...string) {
	if w.fs == nil {
		return
	}
	want := map[string]bool{}
	for _, p := range paths {
		if dir := w.Add(p); dir != "" {
			want[dir] = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for dir := range w.watched {
		if !want[dir] {
			delete(w.watched, dir)
			_ = w.fs.Remove(dir)
		}
	}
}

// run collects events into one pending Change and hands it over when the
// consumer takes it, after the Quiet time without events. The first Change is Lost: the
// consumer's first look at everything, with the watches already in place.
func (w *Watcher) run(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error) {
	defer close(w.done)
	defer close(w.changes)
	if w.fs != nil {
		defer w.fs.Close()
	}
	period := w.cfg.Rescan
	if w.fs == nil {
		period = w.cfg.PollRescan
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	pending := Change{Lost: true}
	have := true
	var quiet <-chan time.Time // nil while no quiet wait runs
	for {
		var out chan<- Change
		if have && quiet == nil {
			out = w.changes
		}
		select {
		case <-ctx.Done():
			return
		case out <- pending:
			pending, have = Change{}, false
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			have = true
			switch {
			case pending.Lost:
			case len(pending.Events) >= w.cfg.MaxEvents:
				pending.Events, pending.Lost = nil, true
			default:
				pending.Events = append(pending.Events, ev)
			}
			if w.cfg.Quiet > 0 {
				// A timer no longer read is collected (Go 1.23): no Stop.
				quiet = time.After(w.cfg.Quiet)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflow or a watcher error loses events; the watches
			// stay, and the consumer's full look recovers what was missed.
			w.cfg.Logger.Warn("fsnotify", "err", err)
			pending.Events, pending.Lost, have = nil, true, true
		case <-quiet:
			quiet = nil
		case <-tick.C:
			pending.Tick, have = true, true
		}
	}
}
