package inbox

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// scan runs on the Run goroutine only, as do all scans: it discovers
// sessions, refreshes the watches, and looks at every served requests/
// directory afresh. It runs at start, after an fsnotify overflow, when the
// inbox's shape changes where no session is known, and on each poll tick.
func (in *Inbox) scan(w *watcher) {
	in.mu.Lock()
	in.scanAll = false
	in.mu.Unlock()
	in.lookForSessions(w)
	for _, id := range in.servedIDs() {
		in.scanSession(w, id, true)
	}
}

// lookForSessions watches sessions/, or its nearest existing ancestor while
// it does not exist, so its creation is an event, and when discovering
// registers the session directories in it.
func (in *Inbox) lookForSessions(w *watcher) {
	w.Set(in.cfg.Layout.SessionsDir())
	if in.discover {
		in.discoverSessions()
	}
}

// scanQueued runs the scans asked for since the last ones: a full scan, or
// the queued sessions (a slot freed, a claim succeeded).
func (in *Inbox) scanQueued(w *watcher) {
	in.mu.Lock()
	all, ids := in.scanAll, slices.Sorted(maps.Keys(in.scanQ))
	clear(in.scanQ)
	in.mu.Unlock()
	if all {
		in.scan(w)
		return
	}
	for _, id := range ids {
		if in.served(id) && !in.readBacklog(id) {
			in.scanSession(w, id, false)
		}
	}
}

// safetyRounds: under fsnotify each session is rescanned afresh every
// safetyRounds ticks, a slice of them per tick, so idle cost per tick stays
// flat however many sessions there are (issue 9). Events carry the work;
// the rescan only repairs what a lost event or a replaced directory hid.
const safetyRounds = 10

func (in *Inbox) safetyNet(w *watcher, round int) {
	if round%safetyRounds == 0 {
		in.lookForSessions(w)
	}
	for i, id := range in.servedIDs() {
		if i%safetyRounds == round%safetyRounds || w.failed[id] {
			in.scanSession(w, id, true)
		}
	}
}

// handle acts on one fsnotify event: a request file named by the event is
// read (or found gone) without listing its directory; anything else changes
// the inbox's shape and rescans what it touches.
func (in *Inbox) handle(w *watcher, ev fsnotify.Event) {
	dir, name := filepath.Split(ev.Name)
	if len(dir) > 1 {
		dir = dir[:len(dir)-1] // a watched path is clean: only its separator to drop
	}
	if id, ok := w.reqDirs[dir]; ok {
		if !strings.HasSuffix(name, ".json") {
			return // the temp file of an atomic write
		}
		if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write) {
			in.scanFile(id, name)
		} else {
			in.fileGone(id, ev.Name) // the watched requests/ and the name
		}
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.forget(ev.Name)
	}
	sessionsDir := in.cfg.Layout.SessionsDir()
	id, ok := w.reqDirs[ev.Name]
	if !ok {
		id, ok = w.roots[ev.Name]
	}
	if !ok {
		id, ok = w.roots[dir] // requests/ or responses/ came or went
	}
	if !ok && dir == sessionsDir {
		if id, ok = sessionIDFromDirName(name); ok && in.discover {
			in.discoverSessions()
		}
	}
	if !ok {
		in.scan(w) // sessions/ or an ancestor: the whole inbox
		return
	}
	in.invalidate(id, nil)
	if in.served(id) {
		in.scanSession(w, id, true)
	}
}

// discoverSessions registers canonical session directories not yet known
// and claims them (the lock and heartbeat contention decide whether each is
// served), and forgets known ones whose directory is gone unless we serve
// them (unlisted). At most MaxDiscovered are known; beyond that a directory
// with a request waiting takes the place of a known session that is idle,
// so junk directories cannot keep a real session out (decision 0053).
func (in *Inbox) discoverSessions() {
	sessions, err := safefs.OpenDir(in.cfg.Layout.Root, "sessions")
	if err != nil {
		return // not created yet, a symlink, or unreadable: rescanned later
	}
	defer sessions.Close()
	entries, truncated, err := sessions.List("", maxSessionDirs, nil)
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
	gone := in.unlisted(listed, truncated)
	in.mu.Unlock()
	slices.Sort(gone)
	for _, id := range gone {
		in.forgetVanished(id, nil, nil, math.MaxUint64)
	}
	in.release(gone, true)

	var waiting []string
	for _, id := range fresh {
		if in.admit(id) {
			in.claim(id)
		} else {
			waiting = append(waiting, id)
		}
	}
	in.reportSaturation(len(waiting))
}

// unlisted returns the known sessions whose directory the listing lacks,
// except the ones we serve: a child's cleanup removes the directory after
// every answer, and letting go handed the next ask to whichever instance
// looked first (decision 0232). Those are marked vanished instead, and give
// way first when a slot is needed (admit). in.mu is held.
func (in *Inbox) unlisted(listed map[string]bool, truncated bool) []string {
	var gone []string
	for id, s := range in.sessions {
		switch {
		case listed[id]:
			s.vanished = false
		case truncated:
		case s.serving:
			s.vanished = true
		default:
			gone = append(gone, id)
		}
	}
	return gone
}

// admit registers id if there is room, or if a session we serve whose
// directory is gone can make room for it, or if the directory holds a
// request and a known session can make room for it by being idle: no
// request in flight and none found on disk by its last scan (one not
// scanned yet, or served elsewhere, is not idle).
func (in *Inbox) admit(id string) bool {
	if in.register(id) {
		return true
	}
	idle := in.evictable(func(s *sessionState) bool { return s.vanished })
	if idle == "" && in.hasRequest(id) {
		idle = in.evictable(func(s *sessionState) bool { return s.idle })
	}
	if idle == "" {
		return false
	}
	in.release([]string{idle}, true)
	return in.register(id)
}

// register knows id as a session if discovery has room for one more.
func (in *Inbox) register(id string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	room := len(in.sessions) < in.cfg.MaxDiscovered
	if room {
		in.sessions[id] = in.newSession()
	}
	return room
}

// evictable is the first known session, by id, that which accepts and
// that has no request in flight; "" if none.
func (in *Inbox) evictable(which func(*sessionState) bool) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var idle string
	for known, s := range in.sessions {
		if which(s) && s.flight.Count() == 0 && (idle == "" || known < idle) {
			idle = known
		}
	}
	return idle
}

// hasRequest reports whether the session directory's requests/ holds a
// request file (read without following symlinks).
func (in *Inbox) hasRequest(id string) bool {
	reqs, err := safefs.OpenDir(in.cfg.Layout.Root, "sessions", wire.EncodeSegment(id), "requests")
	if err != nil {
		return false
	}
	defer reqs.Close()
	entries, _, err := reqs.List(".json", 1, nil)
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
	return in.sessionIDs(func(s *sessionState) bool { return s.serving })
}

func (in *Inbox) served(id string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.sessions[id]
	return s != nil && s.serving
}

// Bounds that keep memory flat however many files a child creates: a scan
// reads at most maxListed names of a directory, and at most maxInFlight
// requests of one session wait for an answer at a time; the rest stay on
// disk until a slot frees (decision 0046). Budget bounds the bytes.
const (
	maxListed   = 4096
	maxInFlight = 64
	// maxSessionDirs bounds a listing of sessions/: names only, so it can
	// be larger than maxListed, and it must be, for a real session to be
	// seen among thousands of junk directories.
	maxSessionDirs = 1 << 16
)

// scanSession delivers new requests of one served session and reports the
// delivered ones whose files vanished. fresh reopens the directories and
// re-adds the watches. Every file operation goes through directories opened
// without following symlinks (safefs.Dir), so a child that swaps requests/ for
// a symlink mid-scan cannot lead a read or a delete out of the inbox.
func (in *Inbox) scanSession(w *watcher, id string, fresh bool) {
	if fresh {
		in.invalidate(id, nil)
	}
	// The session root is watched first, so requests/ appearing after the
	// open below is noticed.
	_ = w.watch(w.roots, in.cfg.Layout.SessionDir(id), id, fresh)
	d, failed, err := in.acquireDirs(id)
	if err != nil {
		in.openFailed(id, failed, err)
		in.setIdle(id, true)
		in.forgetVanished(id, nil, nil, math.MaxUint64)
		return
	}
	defer in.releaseDirs(d)
	reqDirPath := in.cfg.Layout.RequestsDir(id)
	switch err := w.watch(w.reqDirs, reqDirPath, id, fresh); {
	case err == nil:
		delete(w.failed, id)
	case !errors.Is(err, fs.ErrNotExist):
		// Out of inotify watches: this session is rescanned every tick.
		w.failed[id] = true
	}
	// Entries delivered by this scan were just seen; only older ones can
	// have vanished.
	in.mu.Lock()
	before := in.lastID
	in.mu.Unlock()
	// Temp files of atomic writes, and anything else, are not listed. Files
	// already delivered are not listed either (forgetVanished looks at
	// them), so thousands of deferred asks cannot fill the listing and hide
	// a later request from every scan.
	// Directories named *.json are counted and reported as one, never
	// remembered one by one: a child can make any number, and permtui does
	// not remove them (decision 0132).
	delivered, dirs := 0, 0
	skip := func(e fs.DirEntry) bool {
		if e.IsDir() {
			dirs++
			return true
		}
		in.mu.Lock()
		_, ok := in.inflight[d.reqs.Join(e.Name())]
		in.mu.Unlock()
		if ok {
			delivered++
		}
		return ok
	}
	entries, truncated, err := d.reqs.List(".json", in.cfg.MaxListed, skip)
	if err != nil {
		in.cfg.Logger.Warn("list requests", "dir", reqDirPath, "err", err)
		return // unknown state: do not call anything withdrawn
	}
	if truncated {
		in.cfg.Logger.Warn("requests/ holds more files than one scan reads", "dir", reqDirPath, "max", in.cfg.MaxListed)
	}
	in.setIdle(id, len(entries) == 0 && delivered == 0)
	in.reportDirs(id, reqDirPath, dirs, truncated)
	listed := make(map[string]bool, len(entries))
	for _, e := range entries {
		listed[e.Name()] = true
		in.consider(id, d.reqs, e.Name(), e.Type(), false)
	}
	// Kept names come first, in arrival order; those listed joined them.
	in.readKept(id, d)
	if truncated {
		listed = nil // unknown: keep what was reported
		in.backlogIncomplete(id)
	}
	in.forgetVanished(id, d.reqs, listed, before)
}

// reportDirs reports the directories named *.json in a session's requests/
// when their number changed: one line however many there are. A listing
// cut short counted only some, so it reports a growing number only.
func (in *Inbox) reportDirs(id, reqDirPath string, dirs int, truncated bool) {
	in.mu.Lock()
	s := in.sessions[id]
	changed := s != nil && dirs != s.junkDirs && (!truncated || dirs > s.junkDirs)
	if changed {
		s.junkDirs = dirs
	}
	in.mu.Unlock()
	if changed && dirs > 0 {
		in.emit(Invalid{Session: id, Path: reqDirPath, Reason: fmt.Sprintf("%d directories named *.json are not requests; they are skipped, not removed", dirs)})
	}
}

// setIdle records whether the session's last scan found no request file.
func (in *Inbox) setIdle(id string, idle bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if st := in.sessions[id]; st != nil {
		st.idle = idle
	}
}

// scanFile considers the one request file an event named.
func (in *Inbox) scanFile(id, name string) {
	d, failed, err := in.acquireDirs(id)
	if err != nil {
		in.openFailed(id, failed, err)
		return
	}
	defer in.releaseDirs(d)
	typ, err := d.reqs.Mode(name)
	if err != nil {
		return // gone again: its removal event follows
	}
	in.setIdle(id, false)
	in.consider(id, d.reqs, name, typ, false)
}

// fileGone closes a delivered request whose file an event says was
// removed or renamed away, and forgets a refusal of that name.
func (in *Inbox) fileGone(id, path string) {
	in.mu.Lock()
	delete(in.reported, path)
	e := in.inflight[path]
	in.mu.Unlock()
	if e == nil {
		return
	}
	var dir *safefs.Dir
	if d, _, err := in.acquireDirs(id); err == nil {
		defer in.releaseDirs(d)
		if e.stillThere(d.reqs) {
			return // a stale event: the delivered file is still there
		}
		dir = d.reqs
	}
	in.withdrawGone(id, dir, []*entry{e})
}

// openFailed reports a session root or requests/ that could not be opened.
// Anything there but a real directory (a symlink could lead reads and
// deletes out of the inbox) is reported once as invalid; a missing one is
// not reported.
func (in *Inbox) openFailed(id, path string, err error) {
	if !errors.Is(err, safefs.ErrNotDir) {
		if !errors.Is(err, fs.ErrNotExist) {
			in.cfg.Logger.Warn("open inbox directory", "dir", path, "err", err)
		}
		return
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
}

// consider reads one candidate file and delivers, refuses or skips it.
// kept: the name comes off the session's backlog; any other name waits
// behind the names kept for room.
func (in *Inbox) consider(session string, dir *safefs.Dir, name string, typ fs.FileMode, kept bool) {
	path := dir.Join(name)
	in.mu.Lock()
	if e := in.inflight[path]; e != nil {
		in.mu.Unlock()
		if e.stillThere(dir) {
			return
		}
		// Another file took the delivered one's name (a retry renamed over
		// it): that delivery is withdrawn and this file is a new ask.
		in.withdrawGone(session, dir, []*entry{e})
		in.mu.Lock()
	}
	_, busy := in.inflight[path]
	_, refused := in.reported[path]
	s := in.sessions[session]
	full := !busy && !refused && (!kept && in.queuesBehind(s) || !in.roomToRead(s))
	if full {
		in.deferName(s, name, true)
	}
	in.mu.Unlock()
	if busy || refused || full {
		return
	}
	if typ.IsDir() {
		in.scanSoon(session) // the scan counts and reports them
		return
	}
	if !typ.IsRegular() {
		// Symlinks, FIFOs, devices, sockets: never opened.
		in.refuse(session, dir, name, "not a regular file ("+typ.String()+")", true)
		return
	}
	data, file, err := dir.ReadFileID(name, wire.MaxFileSize)
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
	if in.byReq[reqKey{session, req.ID}] != nil {
		// Both would be answered through the same response file; the
		// second waits until the first is done.
		s.waitingID = true
		in.deferName(s, name, false)
		in.mu.Unlock()
		return
	}
	in.lastID++
	// The name shares the path's bytes: a deferred ask keeps only names.
	d := &entry{ask: in.lastID, session: session, path: path, name: path[len(path)-len(name):], file: file, reqID: req.ID, size: int64(len(data))}
	in.inflight[path], in.byID[d.ask], in.byReq[reqKey{session, req.ID}] = d, d, d
	in.holdInFlight(d, s)
	in.mu.Unlock()
	in.emit(Arrived{ID: d.ask, Session: session, Path: path, Request: req, At: in.cfg.Now(), Size: d.size, File: file})
}

// reqKey names a request by session and id; its strings are the entry's
// own, so a deferred ask's names are held once.
type reqKey struct{ session, reqID string }

// drop forgets an in-flight entry. in.mu is held.
func (in *Inbox) drop(e *entry) {
	delete(in.inflight, e.path)
	delete(in.byID, e.ask)
	in.judged(e)
	switch {
	case e.parked || e.deferred:
		in.unpark(e)
	case e.postponed:
		in.postponed--
		if s := in.sessions[e.session]; s != nil {
			s.flight.Add(-1, 0)
		}
		in.roomFreed(e.session)
	default:
		in.releaseInFlight(e)
	}
	in.answered(e)
}

// answered frees the entry's request id for a later request, which is
// looked for at once. in.mu is held.
func (in *Inbox) answered(e *entry) {
	if k := (reqKey{e.session, e.reqID}); in.byReq[k] == e {
		delete(in.byReq, k)
	}
	if s := in.sessions[e.session]; s != nil && s.waitingID {
		s.waitingID = false
		in.queueScan(e.session, s)
	}
}

// refuse reports a refused request file and unlinks it when remove is set
// (never following a symlink, never removing a directory). An entry that
// stays is remembered so it is reported only once.
func (in *Inbox) refuse(session string, dir *safefs.Dir, name, reason string, remove bool) {
	path := dir.Join(name)
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
// listing was cut short, so refused entries are kept. Only deliveries up
// to before are looked at.
func (in *Inbox) forgetVanished(session string, reqDir *safefs.Dir, listed map[string]bool, before AskID) {
	in.mu.Lock()
	var candidates []*entry
	for _, e := range in.inflight {
		if e.session == session && !e.answering && e.ask <= before {
			candidates = append(candidates, e)
		}
	}
	in.mu.Unlock()
	var vanished []*entry
	for _, e := range candidates {
		if reqDir == nil || !e.stillThere(reqDir) {
			vanished = append(vanished, e)
		}
	}
	in.withdrawGone(session, reqDir, vanished)

	in.mu.Lock()
	defer in.mu.Unlock()
	if reqDir == nil || listed != nil {
		reqDirPath := in.cfg.Layout.RequestsDir(session)
		for path := range in.reported {
			if filepath.Dir(path) == reqDirPath && !listed[filepath.Base(path)] {
				delete(in.reported, path)
			}
		}
	}
}

// withdrawGone forgets entries whose files are gone from dir (nil: the
// session has none) and reports the unanswered ones as withdrawn, saying
// which another file replaced.
func (in *Inbox) withdrawGone(session string, dir *safefs.Dir, vanished []*entry) {
	replaced := make([]bool, len(vanished))
	for i, e := range vanished {
		replaced[i] = e.replacedIn(dir)
	}
	var withdrawn []Withdrawn
	in.mu.Lock()
	for i, e := range vanished {
		// A Respond that began meanwhile closes the entry itself.
		if in.byID[e.ask] != e || e.answering {
			continue
		}
		in.drop(e)
		if !e.answered {
			withdrawn = append(withdrawn, Withdrawn{ID: e.ask, Session: session, Path: e.path, Replaced: replaced[i]})
		}
	}
	in.mu.Unlock()
	slices.SortFunc(withdrawn, func(a, b Withdrawn) int { return cmp.Compare(a.ID, b.ID) })
	for _, w := range withdrawn {
		in.emit(w)
	}
}

// stillThere reports whether the file the entry delivered is still in dir:
// the same file, not a later one that took its name (a retried request is
// another ask, and the answer to this one must not reach it).
func (e *entry) stillThere(dir *safefs.Dir) bool {
	id, err := dir.FileID(e.name)
	return err == nil && id == e.file
}

// replacedIn reports whether another regular file has e's name in dir (nil:
// none): the child wrote its request again.
func (e *entry) replacedIn(dir *safefs.Dir) bool {
	if dir == nil {
		return false
	}
	id, err := dir.FileID(e.name)
	return err == nil && id != e.file
}
