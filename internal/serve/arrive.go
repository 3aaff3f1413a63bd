// Arrival and judgment: a delivered request is judged once (judgment.Verdict),
// answered by recorded authority or queued for a person, and judged again
// when the policy, grants or session denies change.

package serve

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/judgment"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

func (s *Server) arrive(ev inbox.Arrived) {
	rec, ok, looked := s.audit.recorded(keyOfRequest(ev.Session, ev.Request))
	switch {
	case ok && !s.sameFacts(rec, ev.Request):
		s.refuseReuse(ev, rec)
		return
	case ok:
		s.replay(ev, rec)
		return
	}
	if s.unreadableDecision(ev.ID) {
		return
	}
	var a Ask
	for {
		gen := s.rejudges.Load()
		a = Ask{Arrived: ev, Verdict: s.judge(ev.ID, ev.Session, ev.Request)}
		if a.Verdict.Action == resolve.Ask { // only a person chooses a scope
			a.Scopes = OfferedScopes(ev.Request, s.cfg.Judge())
		}
		s.mu.Lock()
		if s.closing {
			// Left on disk for whoever serves next; the exit denial is only
			// for asks a person had already been shown.
			s.mu.Unlock()
			return
		}
		// Judged across a rejudge (a reload, new grants or denies), it may
		// have been judged by the ones before, and that rejudge (and
		// rescope) did not see it.
		if s.rejudges.Load() == gen {
			break
		}
		s.mu.Unlock()
	}
	p := &pending{Ask: a, deciding: a.Verdict.Action != resolve.Ask, logChecked: looked}
	p.queued = !p.deciding
	if p.queued && !s.inbox.Park(a.ID) {
		// Beyond the memory budget: it waits on disk, and the inbox
		// delivers it again under the same AskID (decision 0117).
		s.mu.Unlock()
		return
	}
	s.asks[a.ID] = p
	if p.deciding {
		s.workers.Add(1)
	}
	// Read under the lock: once the ask is in s.asks, Run's exit may mark
	// it deciding.
	queued := p.queued
	s.mu.Unlock()

	s.emit(Arrived{Ask: a})
	if queued {
		// Parked: waiting for a person does not hold up automatic answers.
		s.emit(AskQueued{Ask: a})
		return
	}
	s.ready = append(s.ready, job{p, s.ruleAnswer(p)})
}

// refuseReuse lets go of a request that reuses a decided request's identity
// with other facts: the recorded decision was not made about it, and its
// answer would land in the other request's response file (decision 0210).
// The inbox removes the file and reports why; nothing is recorded for it.
func (s *Server) refuseReuse(ev inbox.Arrived, rec AuditRecord) {
	facts := "agent " + wire.QuoteShort(rec.Agent) + ", " + wire.QuoteShort(rec.Surface)
	if rec.Value != nil { // without facts, the value tells them apart (decision 0201)
		facts += ", " + wire.QuoteShort(*rec.Value)
	}
	reason := fmt.Sprintf("request id %s was already decided (%s) for other facts (%s); not answered, since its response file is that request's",
		wire.QuoteShort(ev.Request.ID), rec.State, facts)
	s.cfg.Logger.Warn("request reuses a decided identity with other facts", "ask", ev.ID, "request", ev.Request.ID, "path", ev.Path)
	if err := s.inbox.Refuse(ev.ID, reason); err != nil {
		s.cfg.Logger.Error("reused request not refused", "ask", ev.ID, "err", err)
	}
}

// judge applies the recorded authority. A request without facts always goes
// to a person (ADR 0008 §4), whatever the judge says, and so does one the
// judge fails on.
func (s *Server) judge(id AskID, session string, req *wire.Request) (v resolve.Verdict) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logger.Error("judge failed; asking a person", "ask", id, "request", req.ID, "panic", fmt.Sprint(r))
			v = resolve.Verdict{Action: resolve.Ask, Explanation: "The policy could not judge this request, so a person decides."}
		}
	}()
	judge := s.cfg.Judge()
	denies, err := s.denies(session, req)
	if err != nil {
		s.cfg.Logger.Error("session denies unreadable; asking a person", "session", session, "err", err)
		return resolve.Verdict{Action: resolve.Ask, Surface: req.AccessIntent.Surface,
			Explanation: "Ask. The session denies could not be read (" + err.Error() + "), so a person decides."}
	}
	grants := s.cfg.Grants.For(session)
	if l, ok := judge.(locator); ok && req.AccessIntent != nil {
		l.Locate(req.AccessIntent.RequesterCwd)
	}
	v = judgment.Verdict(judge, req, grants, denies)
	if v.OutsideProject != "" { // one policy for every session served (decision 0234)
		s.cfg.Logger.Warn("ask from outside the project judged; its allows go to a person", "ask", id, "session", session,
			"cwd", req.AccessIntent.RequesterCwd, "project", v.OutsideProject)
	}
	// A legacy request still goes to a person; the policy's reading of its
	// unverified text only informs them (decision 0029).
	if h, ok := judge.(legacyHinter); ok && req.AccessIntent == nil {
		v.Hint = h.LegacyHint(req, grants)
	}
	return v
}

// denies reads the session's denies for a request with facts (only those
// can be covered).
func (s *Server) denies(session string, req *wire.Request) ([]SessionDeny, error) {
	if s.cfg.Denies == nil || req.AccessIntent == nil {
		return nil, nil
	}
	return s.cfg.Denies.Denies(session)
}

func (s *Server) withdrawn(w inbox.Withdrawn) {
	s.mu.Lock()
	p := s.asks[w.ID]
	delete(s.asks, w.ID)
	_, postponed := s.postponed[w.ID]
	delete(s.postponed, w.ID)
	s.mu.Unlock()
	if postponed {
		s.emit(Withdrawn{Withdrawn: w})
	}
	if p != nil {
		if !p.deciding {
			s.recordExpiry(p, w.Replaced)
		}
		s.emit(Withdrawn{Withdrawn: w, Pending: !p.deciding})
	}
}

// recordExpiry notes in the audit log that an ask expired waiting for a
// person. It decides nothing and is not waited for: a line lost in a crash
// only leaves the expiry out of the history.
func (s *Server) recordExpiry(p *pending, replaced bool) {
	rec := s.record(p, "", wire.Response{})
	rec.Kind = AuditExpired
	if replaced {
		rec.Reason = ReplacedReason
	}
	s.audit.appendLazy(rec)
}

// ruleAnswer answers from the verdict of the recorded authority.
func (s *Server) ruleAnswer(p *pending) *answer {
	v := p.Verdict
	resp := wire.Response{DecidedBy: v.DecidedBy()}
	switch {
	case v.Action == resolve.Allow:
		resp.Approved, resp.State = true, wire.StateApproved
	case wire.TrimReason(v.Reason) != "":
		resp.State, resp.DenialReason = wire.StateDeniedWithReason, wire.TrimReason(v.Reason)
	default:
		resp.State = wire.StateDenied
	}
	ans := &answer{record: s.record(p, resp.State, resp)}
	ans.record.Auto = true
	return ans
}

// SurfaceOf names what is asked for: the gate surface when the child sent
// facts, else its display surface.
func SurfaceOf(req *wire.Request) string {
	switch {
	case req.AccessIntent != nil:
		return req.AccessIntent.Surface
	case req.Surface != nil:
		return *req.Surface
	}
	return ""
}

// rejudge asks the recorded authority again about every ask still waiting
// for a person; those it now decides are answered automatically.
func (s *Server) rejudge() {
	s.rejudges.Add(1) // before it looks at s.asks: see arrive
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	// Asks waiting on disk beyond the parked budget are judged again as the
	// inbox delivers them.
	s.inbox.Rejudge()
	waiting := s.waitingLocked()
	s.mu.Unlock()
	var jobs []job
	for _, p := range waiting {
		v := s.judge(p.ID, p.Session, p.Request)
		if v.Action == resolve.Ask {
			continue
		}
		s.mu.Lock()
		if p.deciding || s.asks[p.ID] == nil || s.closing {
			s.mu.Unlock()
			continue
		}
		p.deciding, p.Verdict = true, v
		s.workers.Add(1)
		s.mu.Unlock()
		jobs = append(jobs, job{p, s.ruleAnswer(p)})
	}
	s.answerAll(jobs)
}

// waitingLocked are the asks waiting for a person, by id: the ones a
// reload judges again. s.mu is held.
func (s *Server) waitingLocked() []*pending {
	waiting := slices.DeleteFunc(slices.Collect(maps.Values(s.asks)), func(p *pending) bool { return p.deciding })
	sortByID(waiting)
	return waiting
}

// PolicyLoaded reports a (re)loaded policy and re-judges pending asks; it
// sets st.NoAutoAllow from st.Problems.
func (s *Server) PolicyLoaded(st PolicyStatus) {
	st.NoAutoAllow = len(st.Problems) > 0
	s.emit(st)
	s.rejudge()
	s.rescope()
}

// rescope judges again the scopes offered for each ask still waiting for a
// person, since a reloaded policy may change what their grants reach (a
// deny rule they would pass): changed ones take the next Rev and are sent
// to the front ends, and a choice made from the ones before is refused
// (decision 0229).
func (s *Server) rescope() {
	judge := s.cfg.Judge()
	s.mu.Lock()
	waiting := slices.DeleteFunc(s.waitingLocked(), func(p *pending) bool { return len(p.Scopes.Options) == 0 })
	s.mu.Unlock()
	for _, p := range waiting {
		now := OfferedScopes(p.Request, judge)
		s.mu.Lock()
		now.Rev = p.Scopes.Rev
		if p.deciding || s.asks[p.ID] == nil || s.closing || reflect.DeepEqual(now, p.Scopes) {
			s.mu.Unlock()
			continue
		}
		now.Rev++
		p.Scopes = now
		s.mu.Unlock()
		s.emit(ScopesChanged{Ask: p.ID, Scopes: now})
	}
}

// GrantsUpdated reports whole-session grants changed outside the server
// (a relay's grants from the hub) and re-judges pending asks with them.
func (s *Server) GrantsUpdated() {
	s.emit(GrantsChanged{Grants: s.cfg.Grants.All()})
	s.rejudge()
}
