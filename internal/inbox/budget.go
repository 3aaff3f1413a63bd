package inbox

import (
	"errors"
	"io/fs"
	"time"

	"github.com/permtui/permtui/internal/budget"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// Budget bounds the request data the inbox lets the process hold, over all
// sessions, so no number of sessions and asks can exhaust memory (decision
// 0117). Sizes are the bytes of the request files. Zero fields take the
// defaults.
type Budget struct {
	// ParkedAsks and ParkedBytes bound the asks parked for a person (their
	// requests are held by the front end until answered). An ask beyond
	// them is deferred: forgotten by everything above the inbox and
	// delivered again, under the same AskID, once room frees.
	ParkedAsks  int
	ParkedBytes int64
	// InFlightBytes bounds the requests read and not yet answered, parked
	// or deferred, over all sessions; SessionInFlightBytes does so per
	// session, so one session whose answers cannot be written holds up
	// only itself. A file is read only while a whole MaxFileSize fits.
	InFlightBytes        int64
	SessionInFlightBytes int64
	// DeferredAsks bounds the deferred deliveries, which keep only their
	// names (about 0.5 KiB each, 1.2 KiB at most). Once it is reached no
	// new file is read until an ask is answered. SessionDeferredAsks does
	// so per session, so one flooding session stops only its own reading,
	// and it takes several to stop everyone's.
	DeferredAsks        int
	SessionDeferredAsks int
}

// DefaultBudget is the budget a zero Config.Budget means.
var DefaultBudget = Budget{
	ParkedAsks:           1024,
	ParkedBytes:          64 << 20,
	InFlightBytes:        64 << 20,
	SessionInFlightBytes: 8 << 20,
	DeferredAsks:         1 << 16,
	SessionDeferredAsks:  1 << 13,
}

// WithDefaults is b with its zero fields set to DefaultBudget's.
func (b Budget) WithDefaults() Budget {
	setDefault(&b.ParkedAsks, DefaultBudget.ParkedAsks)
	setDefault(&b.ParkedBytes, DefaultBudget.ParkedBytes)
	setDefault(&b.InFlightBytes, DefaultBudget.InFlightBytes)
	setDefault(&b.SessionInFlightBytes, DefaultBudget.SessionInFlightBytes)
	setDefault(&b.DeferredAsks, DefaultBudget.DeferredAsks)
	setDefault(&b.SessionDeferredAsks, DefaultBudget.SessionDeferredAsks)
	return b
}

// setDefault sets a bound or a timing that is zero or less to def.
func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// setBudgets bounds the counts over all sessions by the configured budget.
func (in *Inbox) setBudgets() {
	b := &in.cfg.Budget
	in.parked.Limit = budget.Limit{Count: b.ParkedAsks, Bytes: b.ParkedBytes}
	in.deferred.Limit = budget.Limit{Count: b.DeferredAsks}
	in.flight.Limit = budget.Limit{Bytes: b.InFlightBytes}
}

// newSession is the state of a session newly known, with its own bounds.
func (in *Inbox) newSession() *sessionState {
	b := &in.cfg.Budget
	return &sessionState{
		flight:   budget.Budget{Limit: budget.Limit{Count: maxInFlight, Bytes: b.SessionInFlightBytes}},
		deferred: budget.Budget{Limit: budget.Limit{Count: b.SessionDeferredAsks}},
	}
}

// Deferring: asks waiting for a person are beyond the parked budget and
// wait on disk (Waiting of them; 0 once none does). It is reported when
// deferral starts and stops, and in between when the number changed, at
// most every deferringReportEvery.
type Deferring struct {
	Waiting int
	Budget  Budget
}

func (Deferring) inboxEvent() {}

// Usage is what the budget counts now.
type Usage struct {
	ParkedAsks, DeferredAsks   int
	ParkedBytes, InFlightBytes int64
}

// Usage reports what the budget counts now.
func (in *Inbox) Usage() Usage {
	in.mu.Lock()
	defer in.mu.Unlock()
	return Usage{ParkedAsks: in.parked.Count(), DeferredAsks: in.deferred.Count(), ParkedBytes: in.parked.Bytes(), InFlightBytes: in.flight.Bytes()}
}

// roomToRead reports whether the session may read one more request file
// now. When it may not, the session is marked to be scanned again once
// room frees. in.mu is held.
func (in *Inbox) roomToRead(s *sessionState) bool {
	switch {
	case !s.flight.Fits(1, wire.MaxFileSize) || s.deferred.Full():
		s.waiting = true
		return false
	case !in.flight.Fits(1, wire.MaxFileSize) || in.deferred.Full():
		s.waiting = true
		in.waitingRoom = true
		return false
	}
	return true
}

// holdInFlight counts a delivered entry against its session's and the
// global in-flight bounds. in.mu is held.
func (in *Inbox) holdInFlight(e *entry, s *sessionState) {
	s.flight.Add(1, e.size)
	in.flight.Add(1, e.size)
}

// releaseInFlight stops counting an in-flight entry (it was answered,
// parked, deferred or withdrawn) and queues the scans waiting for its room.
// in.mu is held.
func (in *Inbox) releaseInFlight(e *entry) {
	in.flight.Release(e.size)
	if s := in.sessions[e.session]; s != nil {
		s.flight.Release(e.size)
	}
	in.roomFreed(e.session)
}

// roomFreed queues a scan of the sessions whose requests wait on disk:
// the freed session at once when its slots are half free (so a burst costs
// one listing per half batch rather than one per answer), and every
// session held back by a global bound once half of it is free. in.mu is
// held.
func (in *Inbox) roomFreed(session string) {
	if s := in.sessions[session]; s != nil && s.waiting && s.flight.HalfFree() && !s.deferred.Full() {
		in.queueScan(session, s)
	}
	if in.waitingRoom && in.flight.HalfFree() && !in.deferred.Full() {
		in.waitingRoom = false
		for id, s := range in.sessions {
			if s.waiting {
				in.queueScan(id, s)
			}
		}
	}
}

// queueScan queues a scan of a session whose requests wait. in.mu is held.
func (in *Inbox) queueScan(id string, s *sessionState) {
	s.waiting = false
	in.scanQ[id] = true
	in.wake()
}

// Park tells the inbox that the delivery id waits for a person. It no
// longer counts towards the in-flight bounds, so asks nobody has answered
// yet never hold up automatic answers (head-of-line, decision 0057). It
// reports false when the ask is beyond the parked budget: it is deferred,
// and the caller must let go of it; the inbox delivers it again under the
// same id once room frees (decision 0117). An id not in flight reports
// true: its withdrawal follows.
func (in *Inbox) Park(id AskID) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.byID[id]
	if e == nil || e.parked {
		return true
	}
	if e.deferred {
		return false
	}
	in.judged(e)
	in.releaseInFlight(e)
	if in.parked.Reserve(e.size) {
		e.parked = true
		return true
	}
	in.setDeferred(e, true)
	in.wake() // the Run goroutine reports the deferral
	return false
}

// setDeferred marks an entry deferred or not and counts it, over all
// sessions and in its own; a share freed lets waiting reads go on. in.mu
// is held.
func (in *Inbox) setDeferred(e *entry, deferred bool) {
	if e.deferred == deferred {
		return
	}
	e.deferred = deferred
	n := 1
	if !deferred {
		n = -1
	}
	in.deferred.Add(n, 0)
	if s := in.sessions[e.session]; s != nil {
		s.deferred.Add(n, 0)
	}
	if !deferred {
		in.roomFreed(e.session)
	}
}

// unpark stops counting a parked or deferred entry and lets a deferred
// one take the room. in.mu is held.
func (in *Inbox) unpark(e *entry) {
	switch {
	case e.parked:
		in.parked.Release(e.size)
		in.wake() // a deferred ask may fit now
	case e.deferred:
		in.setDeferred(e, false)
	}
}

// redeliver delivers again, one at a time, the deliveries waiting on disk
// by name that may be held now (nextWaiting). Run goroutine only.
func (in *Inbox) redeliver() {
	for e := in.nextWaiting(); e != nil; e = in.nextWaiting() {
		in.deliverAgain(e)
	}
}

// nextWaiting picks a delivery of a served session that waits on disk by
// name and may be held again now, and counts it as held. First the oldest
// deferred ask, if it fits in the parked budget: oldest first, so a large
// ask is not starved by smaller later ones, and parked as it is delivered,
// so it cannot be deferred twice for the same room. Then a deferred ask
// marked by Rejudge whose session can read it now, counted in flight
// instead. Then a postponed delivery that is due and whose bytes fit in
// the in-flight bounds (it still counts as one of its session's requests).
func (in *Inbox) nextWaiting() *entry {
	now := in.cfg.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deferred.Count() == 0 && in.postponed == 0 {
		return nil
	}
	var oldest, rejudged, due *entry
	for _, e := range in.byID {
		s := in.sessions[e.session]
		switch {
		case s == nil || !s.serving:
		case e.deferred && !e.answering:
			if oldest == nil || e.ask < oldest.ask {
				oldest = e
			}
			if e.rejudge && rejudged == nil && s.flight.Fits(1, e.size) && in.flight.Fits(0, e.size) {
				rejudged = e
			}
		case e.postponed && due == nil && !now.Before(e.due) && s.flight.Fits(0, e.size) && in.flight.Fits(0, e.size):
			due = e
		}
	}
	switch {
	case oldest != nil && in.parked.Reserve(oldest.size):
		in.setDeferred(oldest, false)
		oldest.rejudge, oldest.parked = false, true
		return oldest
	case rejudged != nil:
		in.setDeferred(rejudged, false)
		rejudged.rejudge, rejudged.rejudging = false, true
		in.rejudging++
		in.holdInFlight(rejudged, in.sessions[rejudged.session])
		return rejudged
	case due != nil:
		due.postponed = false
		in.postponed--
		in.sessions[due.session].flight.Add(0, due.size)
		in.flight.Add(1, due.size)
		return due
	}
	return nil
}

// Rejudge has every deferred ask delivered again, as room in flight allows,
// to be judged by what changed (the policy, grants, session denies): one
// now allowed or denied is answered at once rather than once a person has
// made room for it; one still for a person is deferred again by Park,
// under the same AskID, unseen by the front end.
func (in *Inbox) Rejudge() {
	in.mu.Lock()
	in.rejudged = in.deferred.Count() + in.rejudging
	for _, e := range in.byID {
		if e.deferred {
			e.rejudge = true
		}
	}
	in.mu.Unlock()
	in.wake()
}

// judged: an entry taken off the disk to be judged again was (parked,
// deferred again, answered, postponed or gone), so it no longer counts as
// waiting on disk; the Run goroutine reports the number. in.mu is held.
func (in *Inbox) judged(e *entry) {
	if e.rejudging {
		e.rejudging = false
		in.rejudging--
		in.wake()
	}
}

// Postponing: the first wait, doubled each time up to postponeMax.
const (
	postponeFirst = time.Second
	postponeMax   = 16 * time.Second
)

// Postpone lets go of a delivery whose decision is recorded but whose
// response could not be written (decision 0131): the caller forgets it, the
// inbox keeps only its names and delivers it again under the same AskID
// once it is due, waiting longer each time. It still counts as one of its
// session's requests in flight, not in bytes, so a session whose answers
// cannot be written holds up only itself. It reports false when the id is
// not in flight or is being answered.
func (in *Inbox) Postpone(id AskID) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	e := in.byID[id]
	if e == nil || e.answering || e.answered || e.deferred || e.postponed {
		return false
	}
	s := in.sessions[e.session]
	if s == nil {
		return false
	}
	in.judged(e)
	s.flight.Add(1, 0) // it stays one of its session's requests: releaseInFlight takes one
	if e.parked {
		in.unpark(e)
		e.parked = false
	} else {
		in.releaseInFlight(e)
	}
	e.postponed = true
	in.postponed++
	e.due = in.cfg.Now().Add(min(postponeFirst<<min(e.tries, 8), postponeMax))
	e.tries++
	return true
}

// deliverAgain reads a deferred ask's file again and delivers it under its
// AskID. A file that is gone or was replaced is withdrawn (a replacement is
// a new ask, found by the scan this queues).
func (in *Inbox) deliverAgain(e *entry) {
	d, _, err := in.acquireDirs(e.session)
	if err != nil {
		in.withdrawGone(e.session, nil, []*entry{e})
		return
	}
	defer in.releaseDirs(d)
	data, file, err := d.reqs.ReadFileID(e.name, wire.MaxFileSize)
	var req *wire.Request
	if err == nil && file == e.file {
		req, err = wire.ParseRequest(data)
	}
	if err != nil || file != e.file || req.ID != e.reqID {
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, safefs.ErrNotRegular) {
			in.cfg.Logger.Warn("read deferred request again", "path", e.path, "err", err)
		}
		in.mu.Lock()
		in.drop(e)
		in.scanQ[e.session] = true
		in.mu.Unlock()
		// Read without error, it is another file (or request) under the name.
		in.emit(Withdrawn{ID: e.ask, Session: e.session, Path: e.path, Replaced: err == nil})
		return
	}
	in.emit(Arrived{ID: e.ask, Session: e.session, Path: e.path, Request: req, At: in.cfg.Now(), Size: e.size, File: file})
}

// deferringReportEvery spaces reports of a changing number of deferred
// asks, so a burst is not a report per scan; the start and the end of
// deferral are reported at once.
const deferringReportEvery = 5 * time.Second

// reportDeferring emits Deferring when the number of deferred asks changed
// since the last report, as deferReports spaces them. The number a Rejudge
// released comes first, unspaced: the spacing may have held it back, and
// the last report before none would state an older number. Run goroutine
// only.
func (in *Inbox) reportDeferring() {
	now := in.cfg.Now()
	in.mu.Lock()
	var counts []int
	if r := in.rejudged; r > 0 {
		in.rejudged = 0
		if due, _ := in.deferReports.Due(r, false, now, 0); due {
			counts = append(counts, r)
		}
	}
	// Asks taken off the disk to be judged again still wait until judged:
	// reading them is no recovery.
	n, parked := in.deferred.Count()+in.rejudging, in.parked.String()
	report, wait := in.deferReports.Due(n, false, now, deferringReportEvery)
	if wait > 0 && !in.reportSoon {
		// Nothing else may wake the loop by then: it wakes itself.
		in.reportSoon = true
		time.AfterFunc(wait, func() {
			in.mu.Lock()
			in.reportSoon = false
			in.mu.Unlock()
			in.wake()
		})
	}
	in.mu.Unlock()
	if report {
		counts = append(counts, n)
	}
	for _, n := range counts {
		if n > 0 {
			in.cfg.Logger.Warn("asks beyond the parked budget wait on disk", "waiting", n, "parked", parked)
		}
		in.emit(Deferring{Waiting: n, Budget: in.cfg.Budget})
	}
}
