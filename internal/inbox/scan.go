package inbox

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

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

// discoverSessions registers every canonical session directory not yet known
// and claims it (heartbeat contention decides whether it is served).
func (in *Inbox) discoverSessions() {
	entries, err := os.ReadDir(in.cfg.Layout.SessionsDir())
	if err != nil {
		return // not created yet, or unreadable: rescanned later
	}
	for _, e := range entries {
		if !e.IsDir() { // symlinks are not followed
			continue
		}
		id, ok := sessionIDFromDirName(e.Name())
		if !ok {
			continue
		}
		in.mu.Lock()
		_, known := in.sessions[id]
		if !known {
			in.sessions[id] = &sessionState{}
		}
		in.mu.Unlock()
		if !known {
			in.claim(id)
		}
	}
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

// scanSession delivers new requests of one served session and reports the
// delivered ones whose files vanished.
func (in *Inbox) scanSession(w *watcher, id string) {
	sessionDir := in.cfg.Layout.SessionDir(id)
	reqDir := in.cfg.Layout.RequestsDir(id)
	present := map[string]bool{}
	if in.realDir(id, sessionDir) {
		// The session root is watched so requests/ appearing is noticed.
		w.watch(sessionDir)
		if in.realDir(id, reqDir) {
			w.watch(reqDir)
			entries, err := os.ReadDir(reqDir)
			if err != nil {
				in.cfg.Logger.Warn("list requests", "dir", reqDir, "err", err)
				return // unknown state: do not call anything withdrawn
			}
			for _, e := range entries {
				name := e.Name()
				if !strings.HasSuffix(name, ".json") {
					continue // temp files of atomic writes, and anything else
				}
				path := filepath.Join(reqDir, name)
				present[path] = true
				in.consider(id, path, e)
			}
		}
	}
	in.forgetVanished(id, present)
}

// realDir reports whether dir exists as a real directory. Anything else
// there (a symlink could lead reads and deletes out of the inbox) is
// reported once as invalid.
func (in *Inbox) realDir(id, dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	if st.IsDir() {
		return true
	}
	in.mu.Lock()
	s := in.sessions[id]
	first := s.badDir != dir
	s.badDir = dir
	in.mu.Unlock()
	if first {
		in.cfg.Deliver(Invalid{Session: id, Path: dir, Reason: filepath.Base(dir) + " is not a directory (symlinks are not followed)"})
	}
	return false
}

// consider reads one candidate file and delivers, refuses or skips it.
func (in *Inbox) consider(session, path string, e fs.DirEntry) {
	in.mu.Lock()
	_, busy := in.inflight[path]
	_, refused := in.reported[path]
	in.mu.Unlock()
	if busy || refused {
		return
	}
	if e.IsDir() {
		in.refuse(session, path, "not a regular file (directory)", false)
		return
	}
	if !e.Type().IsRegular() {
		// Symlinks, FIFOs, devices, sockets: never opened.
		in.refuse(session, path, "not a regular file ("+e.Type().String()+")", true)
		return
	}
	data, err := wire.ReadRegularFile(path, wire.MaxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return // the child withdrew it already
	case errors.Is(err, wire.ErrNotRegular):
		in.refuse(session, path, "not a regular file", true)
		return
	case errors.Is(err, wire.ErrTooLarge):
		in.refuse(session, path, "larger than 1 MiB", true)
		return
	case err != nil:
		in.refuse(session, path, "unreadable: "+err.Error(), false)
		return
	}
	req, err := wire.ParseRequest(data)
	if err != nil {
		in.refuse(session, path, err.Error(), true)
		return
	}
	if !req.RoutedTo(session) {
		in.refuse(session, path, "misrouted: targetSessionId "+quote(req.TargetSessionID)+" is not the served session", true)
		return
	}
	if !wire.ValidID(req.ID) {
		in.refuse(session, path, "unsafe request id "+quote(req.ID), true)
		return
	}

	in.mu.Lock()
	for _, other := range in.inflight {
		if other.session == session && other.id == req.ID && !other.answered {
			// Both would be answered through the same response file; the
			// second waits until the first is done.
			in.mu.Unlock()
			return
		}
	}
	in.inflight[path] = &entry{session: session, id: req.ID}
	in.mu.Unlock()
	in.cfg.Deliver(Arrived{Session: session, Path: path, Request: req, At: in.cfg.Now()})
}

// refuse reports a refused request file and removes its directory entry when
// remove is set (os.Remove deletes a symlink itself, never its target). An
// entry that stays is remembered so it is reported only once.
func (in *Inbox) refuse(session, path, reason string, remove bool) {
	if remove {
		err := os.Remove(path)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			in.cfg.Deliver(Invalid{Session: session, Path: path, Reason: reason})
			return
		}
		reason += "; could not remove it: " + err.Error()
	}
	in.mu.Lock()
	in.reported[path] = reason
	in.mu.Unlock()
	in.cfg.Deliver(Invalid{Session: session, Path: path, Reason: reason})
}

// forgetVanished drops state for files of the session that are gone, and
// reports delivered, unanswered ones as withdrawn.
func (in *Inbox) forgetVanished(session string, present map[string]bool) {
	var withdrawn []string
	in.mu.Lock()
	for path, e := range in.inflight {
		if e.session != session || present[path] || e.answering {
			continue
		}
		delete(in.inflight, path)
		if !e.answered {
			withdrawn = append(withdrawn, path)
		}
	}
	reqDir := in.cfg.Layout.RequestsDir(session)
	for path := range in.reported {
		if filepath.Dir(path) == reqDir && !present[path] {
			delete(in.reported, path)
		}
	}
	in.mu.Unlock()
	sort.Strings(withdrawn)
	for _, path := range withdrawn {
		in.cfg.Deliver(Withdrawn{Session: session, Path: path})
	}
}

func isDir(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.IsDir()
}

// quote shows an untrusted string in a reason: escaped and shortened.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
