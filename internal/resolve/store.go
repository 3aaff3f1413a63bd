package resolve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Store holds the current policy snapshot and reloads it when its files
// change. Readers take Policy() once per decision, so an in-flight decision
// keeps the snapshot it started with.
type Store struct {
	opts    LoadOptions
	current atomic.Pointer[Policy]
	mu      sync.Mutex    // serialises reloads
	seen    string        // file metadata taken just before the current load; under mu
	rescan  time.Duration // rescanInterval; tests lengthen it so only events reload
}

// Timings of Watch: events are debounced; the rescan is a safety net for
// missed events (e.g. a directory created above a watched one).
const (
	reloadDebounce = 100 * time.Millisecond
	rescanInterval = 3 * time.Second
)

// NewStore loads the policy once.
func NewStore(opts LoadOptions) *Store {
	s := &Store{opts: opts, rescan: rescanInterval}
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
// onReload (if non-nil) with each new snapshot. It watches the directories
// of WatchPaths (or their nearest existing ancestor) with fsnotify and also
// rescans file metadata periodically. An invalid file only becomes a
// Problem of the new snapshot.
func (s *Store) Watch(ctx context.Context, onReload func(*Policy)) error {
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("policy watcher: %w", err)
	}
	defer watcher.Close()
	watched := map[string]bool{}
	paths := watchPaths(s.opts)
	syncWatches(watcher, watched, paths)

	var debounce <-chan time.Time
	force := false
	// A change made after the last load but before the watches were in
	// place raised no event: look for one now.
	if s.changed() {
		debounce = time.After(0)
	}
	ticker := time.NewTicker(s.rescan)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-watcher.Events:
			if !ok {
				return nil
			}
			force = force || relevant(ev.Name, paths)
			debounce = time.After(reloadDebounce)
			continue
		case _, ok := <-watcher.Errors:
			if !ok {
				return nil
			}
			continue // the rescan catches whatever was missed
		case <-debounce:
		case <-ticker.C:
		}
		debounce = nil
		if !force && !s.changed() {
			continue
		}
		force = false
		p := s.Reload()
		syncWatches(watcher, watched, paths) // directories may have appeared
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
	for _, p := range paths {
		if name == p || filepath.Dir(name) == p || strings.HasPrefix(p, name+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// syncWatches watches each path's directory (and the path itself when it is
// a directory), falling back to the nearest existing ancestor. Every wanted
// directory is added again each time: one deleted and recreated between two
// syncs is a new directory whose old watch died with it (adding an existing
// watch is a no-op).
func syncWatches(w *fsnotify.Watcher, watched map[string]bool, paths []string) {
	want := map[string]bool{}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			want[p] = true
		}
		dir := filepath.Dir(p)
		for {
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				want[dir] = true
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	for dir := range watched {
		if !want[dir] {
			_ = w.Remove(dir)
			delete(watched, dir)
		}
	}
	for dir := range want {
		if w.Add(dir) == nil {
			watched[dir] = true
		}
	}
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
			names := make([]string, 0, len(entries))
			for _, e := range entries {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			for _, n := range names {
				stat(filepath.Join(p, n))
			}
		}
	}
	return b.String()
}
