package inbox

import (
	"cmp"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// scan runs on the Run goroutine only: it discovers sessions, refreshes the
// watches, and looks at every served requests/ directory.
func (in *Inbox) scan(w *watcher) {
	sessionsDir := in.cfg.Layout.SessionsDir()
	if w != nil {
		if isDir(sessionsDir) {
			w.watch(sessionsDir)
		} else {
			w.watchAncestor(sessionsDir)
		}
	}
	if in.discover {
		in.discoverSessions()
	}
	for _, id := range in.servedIDs() {
		in.scanSession(w, id)
	}
}

// discoverSessions registers canonical session directories not yet known
// and claims them (the lock and heartbeat contention decide whether each is
// served), and forgets known ones whose directory is gone. At most
// MaxDiscovered are known; beyond that a directory with a request waiting
// takes the place of a known session that is idle, so junk directories
// cannot keep a real session out (decision 0053).
func (in *Inbox) discoverSessions() {
	sessions, err := safefs.OpenDir(in.cfg.Layout.Root, "sessions")
	if err != nil {
		return // not created yet, a symlink, or unreadable: rescanned later
	}
	defer sessions.Close()
	entries, truncated, err := sessions.List("", maxSessionDirs)
	if err != nil {
		return
	}
	listed := make(map[string]bool, len(entries))
	var fresh []string
	in.mu.Lock()
	for _, e := range entries {
		if !e.IsDir() { // symlinks are not followed
			continue
		}
		id, ok := sessionIDFromDirName(e.Name())
		if !ok {
			continue
		}
		listed[id] = true
		if _, known := in.sessions[id]; !known {
			fresh = append(fresh, id)
		}
	}
	var gone []string
	if !truncated {
		for id := range in.sessions {
			if !listed[id] {
				gone = append(gone, id)
			}
		}
	}
	in.mu.Unlock()
	if len(gone) > 0 {
		sort.Strings(gone)
		for _, id := range gone {
			in.forgetVanished(id, nil, nil)
		}
		in.release(gone, true)
	}

	var waiting []string
	for _, id := range fresh {
		if in.admit(id, sessions) {
			in.claim(id)
		} else {
			waiting = append(waiting, id)
		}
	}
	in.reportSaturation(len(waiting))
}

// admit registers id if there is room, or if the directory holds a request
// and a known session can make room for it by being idle: no request in
// flight and none found on disk by its last scan (one not scanned yet, or
// served elsewhere, is not idle).
func (in *Inbox) admit(id string, sessions *safefs.Dir) bool {
	in.mu.Lock()
	room := len(in.sessions) < in.cfg.MaxDiscovered
	if room {
		in.sessions[id] = &sessionState{}
	}
	in.mu.Unlock()
	if room {
		return true
	}
	if !hasRequest(sessions, id) {
		return false
	}
	in.mu.Lock()
	var idle string
	for known, s := range in.sessions {
		if s.idle && in.inflightOf(known) == 0 && (idle == "" || known < idle) {
			idle = known
		}
	}
	in.mu.Unlock()
	if idle == "" {
		return false
	}
	in.release([]string{idle}, true)
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.sessions) >= in.cfg.MaxDiscovered {
		return false
	}
	in.sessions[id] = &sessionState{}
	return true
}

// hasRequest reports whether the session directory's requests/ holds a
// request file (read without following symlinks).
func hasRequest(sessions *safefs.Dir, id string) bool {
	dir, err := sessions.Open(wire.EncodeSegment(id))
	if err != nil {
		return false
	}
	defer dir.Close()
	reqs, err := dir.Open("requests")
	if err != nil {
		return false
	}
	defer reqs.Close()
	entries, _, err := reqs.List(".json", 1)
	return err == nil && len(entries) > 0
}

// reportSaturation reports when session directories start and stop waiting
// for a discovery slot, and when their number changes.
func (in *Inbox) reportSaturation(waiting int) {
	in.mu.Lock()
	changed := waiting != in.waiting
	in.waiting = waiting
	in.mu.Unlock()
	if !changed {
		return
	}
	if waiting > 0 {
		in.cfg.Logger.Warn("too many session directories; idle ones wait for a slot", "max", in.cfg.MaxDiscovered, "waiting", waiting)
	}
	in.emit(Saturated{Max: in.cfg.MaxDiscovered, Waiting: waiting})
}

// sessionIDFromDirName decodes a session directory name and accepts it only
// if it is the canonical encoding of a usable, already-normalized id.
func sessionIDFromDirName(name string) (string, bool) {
	id, err := url.PathUnescape(name)
	if err != nil || wire.EncodeSegment(id) != name {
		return "", false
	}
	norm, ok := wire.NormalizeSessionID(id)
	if !ok || norm != id {
		return "", false
	}
	return id, true
}

func (in *Inbox) servedIDs() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	ids := make([]string, 0, len(in.sessions))
	for id, s := range in.sessions {
		if s.serving {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Bounds that keep memory flat however many files a child creates: a scan
// reads at most maxListed names of a directory, and at most maxInFlight
// requests of one session wait for an answer at a time; the rest stay on
// disk until a slot frees (decision 0046).
const (
	maxListed   = 4096
	maxInFlight = 64
	// maxSessionDirs bounds a listing of sessions/: names only, so it can
	// be larger than maxListed, and it must be, for a real session to be
	// seen among thousands of junk directories.
	maxSessionDirs = 1 << 16
)

// scanSession delivers new requests of one served session and reports the
// delivered ones whose files vanished. Every file operation goes through
// directories opened without following symlinks (safefs.Dir), so a child that
// swaps requests/ for a symlink mid-scan cannot lead a read or a delete out
// of the inbox.
func (in *Inbox) scanSession(w *watcher, id string) {
	sessionDir := in.cfg.Layout.SessionDir(id)
	reqDirPath := in.cfg.Layout.RequestsDir(id)
	sess := in.openDir(id, sessionDir, func() (*safefs.Dir, error) {
		return safefs.OpenDir(in.cfg.Layout.Root, "sessions", wire.EncodeSegment(id))
	})
	if sess == nil {
		in.setIdle(id, true)
		in.forgetVanished(id, nil, nil)
		return
	}
	defer sess.Close()
	// The session root is watched so requests/ appearing is noticed.
	w.watch(sessionDir)
	reqDir := in.openDir(id, reqDirPath, func() (*safefs.Dir, error) { return sess.Open("requests") })
	if reqDir == nil {
		in.setIdle(id, true)
		in.forgetVanished(id, nil, nil)
		return
	}
	defer reqDir.Close()
	w.watch(reqDirPath)
	// Temp files of atomic writes, and anything else, are not listed.
	entries, truncated, err := reqDir.List(".json", maxListed)
	if err != nil {
		in.cfg.Logger.Warn("list requests", "dir", reqDirPath, "err", err)
		return // unknown state: do not call anything withdrawn
	}
	if truncated {
		in.cfg.Logger.Warn("requests/ holds more files than one scan reads", "dir", reqDirPath, "max", maxListed)
	}
	in.setIdle(id, len(entries) == 0)
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.Name()] = true
		in.consider(id, reqDir, e)
	}
	if truncated {
		listed = nil // unknown: keep what was reported
	}
	in.forgetVanished(id, reqDir, listed)
}

// setIdle records whether the session's last scan found no request file.
func (in *Inbox) setIdle(id string, idle bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if st := in.sessions[id]; st != nil {
		st.idle = idle
	}
}

// openDir opens a session root or requests/ directory. Anything there but a
// real directory (a symlink could lead reads and deletes out of the inbox)
// is reported once as invalid; a missing one is nil without a report.
func (in *Inbox) openDir(id, path string, open func() (*safefs.Dir, error)) *safefs.Dir {
	d, err := open()
	if err == nil {
		return d
	}
	if !errors.Is(err, safefs.ErrNotDir) {
		if !errors.Is(err, fs.ErrNotExist) {
			in.cfg.Logger.Warn("open inbox directory", "dir", path, "err", err)
		}
		return nil
	}
	in.mu.Lock()
	s := in.sessions[id]
	first := s.badDir != path
	s.badDir = path
	in.mu.Unlock()
	if first {
		// The error names the component that is not a real directory.
		in.emit(Invalid{Session: id, Path: path, Reason: err.Error()})
	}
	return nil
}

// consider reads one candidate file and delivers, refuses or skips it.
func (in *Inbox) consider(session string, dir *safefs.Dir, e fs.DirEntry) {
	name := e.Name()
	path := filepath.Join(dir.Path(), name)
	in.mu.Lock()
	_, busy := in.inflight[path]
	_, refused := in.reported[path]
	full := in.inflightOf(session) >= maxInFlight
	in.mu.Unlock()
	if busy || refused || full {
		return
	}
	if e.IsDir() {
		in.refuse(session, dir, name, "not a regular file (directory)", false)
		return
	}
	if !e.Type().IsRegular() {
		// Symlinks, FIFOs, devices, sockets: never opened.
		in.refuse(session, dir, name, "not a regular file ("+e.Type().String()+")", true)
		return
	}
	data, err := dir.ReadFile(name, wire.MaxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return // the child withdrew it already
	case errors.Is(err, safefs.ErrNotRegular):
		in.refuse(session, dir, name, "not a regular file", true)
		return
	case errors.Is(err, safefs.ErrTooLarge):
		in.refuse(session, dir, name, "larger than 1 MiB", true)
		return
	case err != nil:
		in.refuse(session, dir, name, "unreadable: "+err.Error(), false)
		return
	}
	req, err := wire.ParseRequest(data)
	if err != nil {
		in.refuse(session, dir, name, err.Error(), true)
		return
	}
	if !req.RoutedTo(session) {
		in.refuse(session, dir, name, "misrouted: targetSessionId "+wire.QuoteShort(req.TargetSessionID)+" is not the served session", true)
		return
	}

	in.mu.Lock()
	for _, other := range in.inflight {
		if other.session == session && other.reqID == req.ID && !other.answered {
			// Both would be answered through the same response file; the
			// second waits until the first is done.
			in.mu.Unlock()
			return
		}
	}
	in.lastID++
	d := &entry{ask: in.lastID, session: session, path: path, name: name, reqID: req.ID}
	in.inflight[path], in.byID[d.ask] = d, d
	in.mu.Unlock()
	in.emit(Arrived{ID: d.ask, Session: session, Path: path, Request: req, At: in.cfg.Now()})
}

// drop forgets an in-flight entry. in.mu is held.
func (in *Inbox) drop(e *entry) {
	delete(in.inflight, e.path)
	delete(in.byID, e.ask)
}

// inflightOf counts the session's delivered, unanswered requests. in.mu is
// held.
func (in *Inbox) inflightOf(session string) int {
	n := 0
	for _, e := range in.inflight {
		if e.session == session {
			n++
		}
	}
	return n
}

// refuse reports a refused request file and unlinks it when remove is set
// (never following a symlink, never removing a directory). An entry that
// stays is remembered so it is reported only once.
func (in *Inbox) refuse(session string, dir *safefs.Dir, name, reason string, remove bool) {
	path := filepath.Join(dir.Path(), name)
	if remove {
		err := dir.Remove(name)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			in.emit(Invalid{Session: session, Path: path, Reason: reason})
			return
		}
		reason += "; could not remove it: " + err.Error()
	}
	in.mu.Lock()
	in.reported[path] = reason
	in.mu.Unlock()
	in.emit(Invalid{Session: session, Path: path, Reason: reason})
}

// forgetVanished drops state for files of the session that are gone, and
// reports delivered, unanswered ones as withdrawn. reqDir nil means the
// session has no requests/ directory (any more); listed nil means the
// listing was cut short, so refused entries are kept.
func (in *Inbox) forgetVanished(session string, reqDir *safefs.Dir, listed map[string]bool) {
	in.mu.Lock()
	var candidates []*entry
	for _, e := range in.inflight {
		if e.session == session && !e.answering {
			candidates = append(candidates, e)
		}
	}
	in.mu.Unlock()
	var vanished []*entry
	for _, e := range candidates {
		if reqDir == nil || !isRegular(reqDir, e.name) {
			vanished = append(vanished, e)
		}
	}

	var withdrawn []Withdrawn
	in.mu.Lock()
	for _, e := range vanished {
		// A Respond that began meanwhile settles the entry itself.
		if in.byID[e.ask] == nil || e.answering {
			continue
		}
		in.drop(e)
		if !e.answered {
			withdrawn = append(withdrawn, Withdrawn{ID: e.ask, Session: session, Path: e.path})
		}
	}
	if reqDir == nil || listed != nil {
		reqDirPath := in.cfg.Layout.RequestsDir(session)
		for path := range in.reported {
			if filepath.Dir(path) == reqDirPath && !listed[filepath.Base(path)] {
				delete(in.reported, path)
			}
		}
	}
	in.mu.Unlock()
	slices.SortFunc(withdrawn, func(a, b Withdrawn) int { return cmp.Compare(a.ID, b.ID) })
	for _, w := range withdrawn {
		in.emit(w)
	}
}

// isRegular reports whether name is a regular file in dir (a request that is
// still there).
func isRegular(dir *safefs.Dir, name string) bool {
	m, err := dir.Mode(name)
	return err == nil && m.IsRegular()
}

func isDir(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.IsDir()
}
