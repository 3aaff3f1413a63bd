package inbox

// The backlog keeps the names of request files seen while their session
// had no room in flight (or waited for an earlier request with the same
// id), so that when room frees they are read without listing requests/
// again: during a burst a listing per freed half of the in-flight slots
// cost more than the answers (issue 23). A name that does not fit marks the
// backlog incomplete, and the next scan of the session lists the directory
// as before; so does the safety net's tick.

const (
	// maxBacklog bounds the names one session keeps; maxBacklogTotal the
	// names of all sessions (a name is at most 255 bytes).
	maxBacklog      = maxListed
	maxBacklogTotal = 1 << 16
)

// backlog is one session's names waiting for room, in arrival order.
type backlog struct {
	names      []string
	queued     map[string]bool
	incomplete bool // a name was not kept: the next scan lists
}

// deferName remembers a name that could not be read for lack of room. in.mu
// is held.
func (in *Inbox) deferName(s *sessionState, name string) {
	b := &s.backlog
	switch {
	case b.queued[name]:
	case len(b.names) >= maxBacklog || in.backlogged >= maxBacklogTotal:
		b.incomplete = true
	default:
		if b.queued == nil {
			b.queued = map[string]bool{}
		}
		b.queued[name] = true
		b.names = append(b.names, name)
		in.backlogged++
	}
}

// nextName takes the oldest kept name while the session has room; ok is
// false when there is none or no room. in.mu is held.
func (in *Inbox) nextName(s *sessionState) (name string, ok bool) {
	b := &s.backlog
	if len(b.names) == 0 || !in.roomToRead(s) {
		return "", false
	}
	name, b.names[0] = b.names[0], ""
	b.names = b.names[1:]
	delete(b.queued, name)
	in.backlogged--
	if len(b.names) == 0 {
		b.names, b.queued = nil, nil // let a burst's arrays go
	}
	return name, true
}

// clearBacklog forgets the kept names of a session no longer served (a
// session served again is listed afresh). in.mu is held.
func (in *Inbox) clearBacklog(s *sessionState) {
	in.backlogged -= len(s.backlog.names)
	s.backlog = backlog{}
}

// readBacklog reads the session's kept names while it has room, and
// reports whether that was all the scan needed: false when no name is kept
// and some were not, and the session must be listed.
func (in *Inbox) readBacklog(id string) bool {
	in.mu.Lock()
	s := in.sessions[id]
	if s == nil || len(s.backlog.names) == 0 {
		if s != nil {
			s.backlog.incomplete = false // the listing sees them all
		}
		in.mu.Unlock()
		return s == nil
	}
	in.mu.Unlock()
	d, failed, err := in.acquireDirs(id)
	if err != nil {
		in.openFailed(id, failed, err)
		return true
	}
	defer in.releaseDirs(d)
	// A name whose id is still answered is kept again: each is tried once.
	in.mu.Lock()
	n := len(s.backlog.names)
	in.mu.Unlock()
	for range n {
		in.mu.Lock()
		name, ok := in.nextName(s)
		in.mu.Unlock()
		if !ok {
			break
		}
		if typ, err := d.reqs.Mode(name); err == nil {
			in.consider(id, d.reqs, name, typ)
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(s.backlog.names) > 0 || !s.backlog.incomplete
}

// backlogIncomplete marks a session's backlog as missing names (a listing
// read only part of requests/).
func (in *Inbox) backlogIncomplete(id string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if s := in.sessions[id]; s != nil {
		s.backlog.incomplete = true
	}
}
