package inbox

// The backlog keeps the names of request files seen while their session
// had no room in flight (or waited for an earlier request with the same
// id), so that when room frees they are read without listing requests/
// again: during a burst a listing per freed half of the in-flight slots
// cost more than the answers (issue 23). A name that does not fit marks the
// backlog incomplete, and the next scan of the session lists the directory
// as before; so does the safety net's tick. While names wait for room, a
// name an event or a listing finds waits behind them, and a listing reads
// the kept names first, so they are read in arrival order (decision 0255).

const (
	// maxBacklog bounds the names one session keeps; maxBacklogTotal the
	// names of all sessions (a name is at most 255 bytes).
	maxBacklog      = maxListed
	maxBacklogTotal = 1 << 16
)

// backlog is one session's names waiting for room, in arrival order.
type backlog struct {
	names      []string
	queued     map[string]bool // the kept names: true for one waiting for room
	forRoom    int             // names kept for lack of room (not for their id)
	incomplete bool            // a name was not kept: the next scan lists
}

// deferName remembers a name that could not be read for lack of room
// (forRoom) or because its id's earlier request is unanswered. in.mu is
// held.
func (in *Inbox) deferName(s *sessionState, name string, forRoom bool) {
	b := &s.backlog
	if _, kept := b.queued[name]; kept {
		return
	}
	if len(b.names) >= maxBacklog || in.backlogged >= maxBacklogTotal {
		b.incomplete = true
		return
	}
	if b.queued == nil {
		b.queued = map[string]bool{}
	}
	b.queued[name] = forRoom
	if forRoom {
		b.forRoom++
	}
	b.names = append(b.names, name)
	in.backlogged++
}

// queuesBehind reports whether a name a listing or an event found must
// wait behind kept names, however much room there is: older names wait for
// room, and reading this one first breaks arrival order (and takes the
// slot the oldest waits for). Names waiting only for their id's answer
// hold nothing up. The session is marked waiting, so freed room reads the
// backlog. in.mu is held.
func (in *Inbox) queuesBehind(s *sessionState) bool {
	if s.backlog.forRoom == 0 {
		return false
	}
	s.waiting = true
	return true
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
	if b.queued[name] {
		b.forRoom--
	}
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
	in.readKept(id, d)
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(s.backlog.names) > 0 || !s.backlog.incomplete
}

// readKept reads the session's kept names, oldest first, while it has
// room. A name whose id is still answered is kept again: each is tried
// once.
func (in *Inbox) readKept(id string, d *dirs) {
	in.mu.Lock()
	s := in.sessions[id]
	n := 0
	if s != nil {
		n = len(s.backlog.names)
	}
	in.mu.Unlock()
	for range n {
		in.mu.Lock()
		name, ok := in.nextName(s)
		in.mu.Unlock()
		if !ok {
			break
		}
		if typ, err := d.reqs.Mode(name); err == nil {
			in.consider(id, d.reqs, name, typ, true)
		}
	}
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
