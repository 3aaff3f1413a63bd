package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// gen plays the children of one served session: it writes requests as pi
// does (temp + rename into requests/) and takes each response the way a
// child does (read once, delete). It learns of a response from inotify
// rather than pi's 250 ms poll, so latency measures the server, not the
// poll interval.
type gen struct {
	layout   wire.Layout
	session  string
	template []byte
	run      int64
	respDir  string
	watcher  *fsnotify.Watcher

	takeMu sync.Mutex // one taker at a time: a file is read and deleted once

	mu       sync.Mutex
	next     uint64
	sent     map[string]time.Time // unanswered ids and when their write began
	answered map[string]bool
	lat      []time.Duration
	last     time.Time // when the latest answer was taken
	dup      int       // responses for an id answered before
	unknown  int       // responses for an id never sent
	denied   int       // responses that were not approvals
	changed  chan struct{}
	done     chan struct{}
}

func newGen(layout wire.Layout, session string) (*gen, error) {
	tpl, err := requestTemplate(session)
	if err != nil {
		return nil, err
	}
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, err
	}
	g := &gen{
		layout: layout, session: session, template: tpl, run: time.Now().UnixMilli(),
		respDir: layout.ResponsesDir(session), watcher: w,
		sent: map[string]time.Time{}, answered: map[string]bool{},
		changed: make(chan struct{}, 1), done: make(chan struct{}),
	}
	// pi's node removes a session's empty directories, as its children do
	// (§2.5): the sessions folder is watched too, so a recreated session or
	// responses directory is watched again.
	if err := w.Add(filepath.Dir(g.sessionDir())); err != nil {
		w.Close()
		return nil, err
	}
	g.rewatch()
	go g.loop()
	return g, nil
}

func (g *gen) close() {
	g.watcher.Close()
	<-g.done
}

func (g *gen) loop() {
	defer close(g.done)
	for {
		select {
		case ev, ok := <-g.watcher.Events:
			if !ok {
				return
			}
			switch {
			case ev.Has(fsnotify.Create) && (ev.Name == g.sessionDir() || ev.Name == g.respDir):
				g.rewatch()
			case ev.Has(fsnotify.Create) && strings.HasSuffix(ev.Name, ".json") && filepath.Dir(ev.Name) == g.respDir:
				g.take(filepath.Base(ev.Name))
			}
		case err, ok := <-g.watcher.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				g.sweep()
			}
		}
	}
}

func (g *gen) sessionDir() string { return filepath.Dir(g.respDir) }

// rewatch watches the session and responses directories where they exist,
// then takes any response written before the watch began.
func (g *gen) rewatch() {
	_ = g.watcher.Add(g.sessionDir())
	_ = g.watcher.Add(g.respDir)
	g.sweep()
}

// sweep takes every response present: after an inotify overflow, and at the
// end of a phase in case an event was lost.
func (g *gen) sweep() {
	entries, _ := os.ReadDir(g.respDir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			g.take(e.Name())
		}
	}
}

// take reads a response once and deletes it, as a child does.
func (g *gen) take(name string) {
	path := filepath.Join(g.respDir, name)
	g.takeMu.Lock()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		g.takeMu.Unlock()
		return // taken already (a sweep and an event both saw it)
	}
	now := time.Now()
	_ = os.Remove(path)
	g.takeMu.Unlock()
	var r struct {
		Approved bool   `json:"approved"`
		State    string `json:"state"`
	}
	ok := err == nil && json.Unmarshal(data, &r) == nil && r.Approved && r.State == "approved"
	id := strings.TrimSuffix(name, ".json")
	g.mu.Lock()
	defer g.mu.Unlock()
	at, pending := g.sent[id]
	switch {
	case pending:
		delete(g.sent, id)
		g.answered[id] = true
		g.lat = append(g.lat, now.Sub(at))
		g.last = now
	case g.answered[id]:
		g.dup++
	default:
		g.unknown++
	}
	if !ok {
		g.denied++
	}
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// send writes one request atomically, as pi's child does (§3).
func (g *gen) send() error {
	g.mu.Lock()
	g.next++
	id := requestID(g.run, g.next)
	g.sent[id] = time.Now()
	g.mu.Unlock()
	path, data := g.layout.RequestPath(g.session, id), fill(g.template, id)
	err := safefs.WriteFileAtomic(path, data)
	// Removed while empty: make them again, as a child does. pi's node may
	// remove the session directory again between two mkdirs, so a few tries.
	for try := 0; errors.Is(err, fs.ErrNotExist) && try < 20; try++ {
		for _, dir := range []string{filepath.Dir(path), g.respDir} {
			if err = os.MkdirAll(dir, 0o700); err != nil {
				break
			}
		}
		if err == nil {
			g.rewatch()
			err = safefs.WriteFileAtomic(path, data)
		}
	}
	return err
}

// steady sends rate requests a second for d, open loop: a slow server does
// not slow the children down.
func (g *gen) steady(rate int, d time.Duration) (int, error) {
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		if err := g.send(); err != nil {
			return i, err
		}
	}
	return n, nil
}

// burst writes n requests back to back.
func (g *gen) burst(n int) error {
	for range n {
		if err := g.send(); err != nil {
			return err
		}
	}
	return nil
}

// wait blocks until every sent request is answered or timeout passes, then
// reports what is still unanswered.
func (g *gen) wait(timeout time.Duration) int {
	deadline := time.After(timeout)
	swept := false
	for {
		g.mu.Lock()
		left := len(g.sent)
		g.mu.Unlock()
		if left == 0 {
			return 0
		}
		select {
		case <-g.changed:
		case <-time.After(time.Second):
			if !swept { // an answer may have slipped past inotify
				g.sweep()
				swept = true
			}
		case <-deadline:
			g.sweep()
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.sent)
		}
	}
}

// stats are the answers since the last reset.
type stats struct {
	n, dup, unknown, denied int
	p50, p99, max           time.Duration
	last                    time.Time
}

func (g *gen) reset() stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := stats{n: len(g.lat), dup: g.dup, unknown: g.unknown, denied: g.denied, last: g.last}
	if len(g.lat) > 0 {
		slices.Sort(g.lat)
		s.p50 = g.lat[len(g.lat)/2]
		s.p99 = g.lat[len(g.lat)*99/100]
		s.max = g.lat[len(g.lat)-1]
	}
	g.lat, g.dup, g.unknown, g.denied = g.lat[:0], 0, 0, 0
	return s
}

// check is what the smoke test asserts: every request answered, once,
// with an approval.
func (s stats) check(sent, unanswered int) error {
	switch {
	case unanswered > 0:
		return fmt.Errorf("%d of %d requests unanswered", unanswered, sent)
	case s.n != sent:
		return fmt.Errorf("%d answers for %d requests", s.n, sent)
	case s.dup > 0 || s.unknown > 0:
		return fmt.Errorf("%d duplicate and %d unknown responses", s.dup, s.unknown)
	case s.denied > 0:
		return fmt.Errorf("%d responses were not approvals", s.denied)
	}
	return nil
}
