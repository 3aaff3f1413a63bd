package resolve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permtui/permtui/internal/watch"
)

// Store holds the current policy snapshot and reloads it when its files
// change. Readers take Policy() once per decision, so an in-flight decision
// keeps the snapshot it started with.
type Store struct {
	opts    LoadOptions
	current atomic.Pointer[Policy]
	mu      sync.Mutex // serialises reloads
	seen    string     // file metadata taken just before the current load; under mu

	// Rescan is how often Watch compares the files' metadata for what
	// events missed (NewStore sets 3 s); set it before Watch.
	Rescan time.Duration
}

// Timings of Watch: events are debounced; the rescan is a safety net for
// missed events.
const (
	reloadDebounce = 100 * time.Millisecond
	rescanInterval = 3 * time.Second
)

// NewStore loads the policy once.
func NewStore(opts LoadOptions) *Store {
	s := &Store{opts: opts, Rescan: rescanInterval}
	s.Reload()
	return s
}

// Policy returns the current immutable snapshot.
func (s *Store) Policy() *Policy { return s.current.Load() }

// Reload loads the files again and makes the result current.
func (s *Store) Reload() *Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Taken before reading, so a change during the load is seen as new.
	s.seen = fingerprint(watchPaths(s.opts))
	p := Load(s.opts)
	s.current.Store(p)
	return p
}

// Watch reloads on changes to the policy files until ctx is done, calling
// onReload (if non-nil) with each new snapshot. It runs the shared watch
// loop over WatchPaths (decision 0003): events name a policy file or a
// directory on the way to one, and the periodic rescan compares file
// metadata for what events miss. An invalid file only becomes a Problem of
// the new snapshot: a broken policy is never replaced by the last good one
// (decision 0052).
func (s *Store) Watch(ctx context.Context, onReload func(*Policy)) {
	paths := watchPaths(s.opts)
	w := watch.New(ctx, watch.Config{Rescan: s.Rescan, Quiet: reloadDebounce}, paths...)
	// The first change comes once the watches are in place: a change made
	// after the last load but before then raised no event, so it is looked
	// for by metadata, as on every rescan.
	for c := range w.Changes() {
		force := slices.ContainsFunc(c.Names(), func(name string) bool { return relevant(name, paths) })
		if !force && !s.changed() {
			continue
		}
		p := s.Reload()
		w.Set(paths...) // directories may have appeared or been recreated
		if onReload != nil {
			onReload(p)
		}
	}
}

// changed reports whether the files differ from what the last load saw.
func (s *Store) changed() bool {
	now := fingerprint(watchPaths(s.opts))
	s.mu.Lock()
	defer s.mu.Unlock()
	return now != s.seen
}

// relevant: the event concerns a watched path, a file inside a watched
// directory, or a directory on the way to one.
func relevant(name string, paths []string) bool {
	return slices.ContainsFunc(paths, func(p string) bool {
		return name == p || filepath.Dir(name) == p || strings.HasPrefix(p, name+string(filepath.Separator))
	})
}

// fingerprint summarises the metadata of the watched files and of the
// agent files inside watched directories.
func fingerprint(paths []string) string {
	var b strings.Builder
	stat := func(p string) {
		fi, err := os.Stat(p) // follows links: an edit of a linked file's target counts
		if err != nil {
			fmt.Fprintf(&b, "%s:-;", p)
			return
		}
		fmt.Fprintf(&b, "%s:%v:%d:%d;", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
	}
	for _, p := range paths {
		stat(p)
		if entries, err := os.ReadDir(p); err == nil {
			for _, e := range entries { // os.ReadDir sorts them by name
				stat(filepath.Join(p, e.Name()))
			}
		}
	}
	return b.String()
}
