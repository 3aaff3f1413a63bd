package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/wire"
)

// responder is the comparison floor: the least a serving node must do. One
// goroutine takes each file named by an inotify event, approves it without
// a policy or an audit log, writes the response atomically and deletes the
// request; a ticker refreshes one heartbeat per session each second. It
// serves every session directory under root, including later ones.
type responder struct {
	root     string
	pid      int
	w        *fsnotify.Watcher
	sessions map[string]bool // served session directory names
	buf      []byte
	n        uint64
}

func runResponder(ctx context.Context, root string) error {
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return err
	}
	defer w.Close()
	r := &responder{root: root, pid: os.Getpid(), w: w, sessions: map[string]bool{}}
	sessions := filepath.Join(root, "sessions")
	if err := w.Add(sessions); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "serving"), 0o700); err != nil {
		return err
	}
	r.discover()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			for s := range r.sessions {
				_ = os.Remove(r.heartbeatPath(s))
			}
			return nil
		case <-tick.C:
			for s := range r.sessions {
				r.heartbeat(s)
			}
		case ev := <-w.Events:
			dir, name := filepath.Split(ev.Name)
			dir = filepath.Clean(dir)
			switch {
			case dir == sessions && ev.Has(fsnotify.Create):
				r.add(name)
			case ev.Has(fsnotify.Create) && strings.HasSuffix(name, ".json"):
				r.answer(filepath.Dir(dir), name)
			}
		case err := <-w.Errors:
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				r.discover() // rescans every inbox
			}
		}
	}
}

func (r *responder) discover() {
	entries, _ := os.ReadDir(filepath.Join(r.root, "sessions"))
	for _, e := range entries {
		r.add(e.Name())
	}
	for s := range r.sessions {
		reqs := filepath.Join(r.root, "sessions", s, "requests")
		entries, _ := os.ReadDir(reqs)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".json") {
				r.answer(filepath.Dir(reqs), e.Name())
			}
		}
	}
}

func (r *responder) add(session string) {
	if r.sessions[session] {
		return
	}
	if err := r.w.Add(filepath.Join(r.root, "sessions", session, "requests")); err != nil {
		return
	}
	r.sessions[session] = true
	r.heartbeat(session)
}

func (r *responder) heartbeatPath(session string) string {
	return filepath.Join(r.root, "serving", session+".json")
}

func (r *responder) heartbeat(session string) {
	// The directory name is the encoded id; the load world's ids encode
	// to themselves.
	b := append(r.buf[:0], `{"sessionId":"`...)
	b = append(b, session...)
	b = append(b, `","pid":`...)
	b = strconv.AppendInt(b, int64(r.pid), 10)
	b = append(b, `,"updatedAt":`...)
	b = strconv.AppendInt(b, time.Now().UnixMilli(), 10)
	b = append(b, '}')
	r.buf = b
	r.write(r.heartbeatPath(session), b)
}

// answer approves one request of the session directory sessionDir.
func (r *responder) answer(sessionDir, name string) {
	reqPath := filepath.Join(sessionDir, "requests", name)
	data, err := os.ReadFile(reqPath)
	if err != nil {
		return
	}
	var req struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &req) != nil || !wire.ValidID(req.ID) {
		_ = os.Remove(reqPath)
		return
	}
	b := append(r.buf[:0], `{"approved":true,"state":"approved","responderSessionId":"`...)
	b = append(b, filepath.Base(sessionDir)...)
	b = append(b, `","respondedAt":`...)
	b = strconv.AppendInt(b, time.Now().UnixMilli(), 10)
	b = append(b, `,"decidedBy":{"kind":"rule","surface":"bash","pattern":"ls","origin":"global"}}`...)
	r.buf = b
	if r.write(filepath.Join(sessionDir, "responses", req.ID+".json"), b) {
		_ = os.Remove(reqPath)
	}
}

// write publishes data at path with pi's atomic protocol (temp + rename).
func (r *responder) write(path string, data []byte) bool {
	r.n++
	tmp := path + "." + strconv.Itoa(r.pid) + "." + strconv.FormatUint(r.n, 10) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return false
	}
	return true
}
