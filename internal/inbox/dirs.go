package inbox

import (
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// dirs are a session's open directories, kept while they stay valid, so a
// request costs no reopening of the path and no mkdir of responses/
// (issue 9). They were opened without following symlinks (decision 0046);
// a child that renames one away takes our operations with it, into a
// directory that is still its own. A structural event (a session root or
// requests/ created, removed or renamed), an operation that finds a
// directory deleted, and each safety-net rescan drop the cached set; the
// next use reopens the path. Without fsnotify nothing is cached.
type dirs struct {
	sess, reqs *safefs.Dir
	resps      *safefs.Dir // opened (created) with the first response
	refs       int         // users, plus one while cached; in.mu guards
}

// acquireDirs returns the session's cached directories, opening them when
// there are none. failed names the component that could not be opened.
// Every acquireDirs is paired with a releaseDirs.
func (in *Inbox) acquireDirs(id string) (d *dirs, failed string, err error) {
	in.mu.Lock()
	s := in.sessions[id]
	if s != nil && s.dirs != nil {
		s.dirs.refs++
		d = s.dirs
	}
	in.mu.Unlock()
	if d != nil {
		return d, "", nil
	}
	sess, err := safefs.OpenDir(in.cfg.Layout.Root, "sessions", wire.EncodeSegment(id))
	if err != nil {
		return nil, in.cfg.Layout.SessionDir(id), err
	}
	reqs, err := sess.Open("requests")
	if err != nil {
		sess.Close()
		return nil, in.cfg.Layout.RequestsDir(id), err
	}
	d = &dirs{sess: sess, reqs: reqs, refs: 1}
	in.mu.Lock()
	if s != nil && s.dirs == nil && in.cache {
		s.dirs = d
		d.refs++
	}
	in.mu.Unlock()
	return d, "", nil
}

// releaseDirs ends one use; the last one closes the descriptors.
func (in *Inbox) releaseDirs(d *dirs) {
	in.mu.Lock()
	d.refs--
	last := d.refs == 0
	in.mu.Unlock()
	if last {
		d.close()
	}
}

func (d *dirs) close() {
	d.sess.Close()
	d.reqs.Close()
	if d.resps != nil {
		d.resps.Close()
	}
}

// invalidate drops the session's cached directories (only d, when d is not
// nil: a newer set stays); users finish with the old descriptors.
func (in *Inbox) invalidate(id string, d *dirs) {
	in.mu.Lock()
	s := in.sessions[id]
	if s == nil || s.dirs == nil || d != nil && s.dirs != d {
		in.mu.Unlock()
		return
	}
	d = s.dirs
	s.dirs = nil
	in.mu.Unlock()
	in.releaseDirs(d)
}

// responses opens responses/, creating it when missing (pi recreates it
// defensively before answering, #398), once per cached set.
func (in *Inbox) responses(d *dirs) (*safefs.Dir, error) {
	in.mu.Lock()
	r := d.resps
	in.mu.Unlock()
	if r != nil {
		return r, nil
	}
	r, err := d.sess.OpenPrivate("responses")
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	if d.resps == nil {
		d.resps = r
	} else {
		r.Close()
		r = d.resps
	}
	in.mu.Unlock()
	return r, nil
}
