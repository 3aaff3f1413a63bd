// Answering: a decision is recorded in the audit log before its response is
// written; writes that fail are retried or handed back to the inbox.

package serve

import (
	"errors"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/wire"
)

// record is the audit record of p decided as state and answered with
// resp; the grants or session deny it records are the caller's to add.
func (s *Server) record(p *pending, state wire.State, resp wire.Response) AuditRecord {
	req := p.Request
	rec := AuditRecord{
		AskID:             p.ID,
		RequestID:         req.ID,
		ServedSession:     p.Session,
		RequesterSession:  req.RequesterSessionID,
		Agent:             req.RequesterAgentName,
		Surface:           SurfaceOf(req),
		State:             state,
		Approved:          resp.Approved,
		DecidedBy:         resp.DecidedBy,
		Reason:            resp.DenialReason,
		SessionGrantWidth: resp.SessionGrantWidth,
		CreatedAt:         req.CreatedAt,
		DecidedAt:         s.cfg.Now().UnixMilli(),
		Facts:             auditFacts(req.AccessIntent),
	}
	if req.AccessIntent != nil {
		rec.MatchValues = req.AccessIntent.MatchValues
	} else {
		rec.Value = shownValue(req)
	}
	if resp.State != state {
		rec.WireState = resp.State
	}
	return rec
}

// errGone: the request vanished; the ask was reported withdrawn.
var errGone = errors.New("request gone")

// job is a decided ask and its answer.
type job struct {
	p   *pending
	ans *answer
}

// answerQueue holds decided answers for the answerer. The consumer never
// waits for it: what it decides while the answerer writes (an fsync on a
// slow disk) is answered next, together, with one audit commit.
type answerQueue struct {
	mu     sync.Mutex
	jobs   []job
	closed bool
	ready  chan struct{} // signalled when jobs were added or the queue closed
}

func (q *answerQueue) put(jobs []job) {
	if len(jobs) == 0 {
		return
	}
	q.mu.Lock()
	q.jobs = append(q.jobs, jobs...)
	q.mu.Unlock()
	poke(q.ready)
}

func (q *answerQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	poke(q.ready)
}

// take waits for queued answers; it returns none once closed and empty.
func (q *answerQueue) take(spare []job) []job {
	for {
		q.mu.Lock()
		jobs := q.jobs
		if len(jobs) > 0 || q.closed {
			q.jobs = spare[:0]
			q.mu.Unlock()
			return jobs
		}
		q.mu.Unlock()
		<-q.ready
	}
}

// answerer writes the answers the consumer decided, a batch at a time, so
// that judging the next requests overlaps the audit's fsync and the
// response writes of the last ones.
func (s *Server) answerer() {
	var spare []job
	for {
		jobs := s.answering.take(spare)
		if len(jobs) == 0 {
			return
		}
		s.answerAll(jobs)
		clear(jobs)
		spare = jobs
	}
}

// answerAll answers jobs decided together on the caller's goroutine: their
// decisions share one audit commit, then each response is written. An
// answer that cannot be written is retried on its own goroutine.
func (s *Server) answerAll(jobs []job) {
	recs := make([]AuditRecord, 0, len(jobs))
	for _, j := range jobs {
		s.adoptRecorded(j.p, j.ans)
		if !j.ans.audited {
			recs = append(recs, j.ans.record)
		}
	}
	if len(recs) > 0 && s.audit.appendAll(recs) == nil {
		for _, j := range jobs {
			j.ans.audited = true
		}
	}
	for _, j := range jobs {
		p, ans := j.p, j.ans
		if err := s.attempt(p, ans); err != nil && !errors.Is(err, errGone) && !s.postpone(p, ans) {
			go s.retry(p, ans)
			continue
		}
		s.workers.Done()
	}
}

// attempt makes the decision durable in the audit log, records its grants,
// then writes the response. Each step runs once per answer, so a retry
// neither audits nor grants twice. Failures are reported as WriteFailed.
func (s *Server) attempt(p *pending, ans *answer) error {
	s.adoptRecorded(p, ans)
	if !ans.audited {
		if err := s.audit.append(ans.record); err != nil {
			if !ans.unaudited {
				ans.unaudited = true
				s.emit(WriteFailed{Ask: p.ID, Err: err.Error()})
			}
			return err
		}
		ans.audited = true
	}
	rec := ans.record
	if !ans.granted && len(rec.Grants) > 0 {
		if err := s.cfg.Grants.Add(p.Session, rec.Grants); err != nil {
			s.emit(WriteFailed{Ask: p.ID, Err: "record grants: " + err.Error()})
			return err
		}
		s.emit(GrantsChanged{Grants: s.cfg.Grants.All()})
	}
	if !ans.granted && rec.SessionDeny != nil && s.cfg.Denies != nil {
		if err := s.cfg.Denies.AddDeny(p.Session, *rec.SessionDeny); err != nil {
			s.emit(WriteFailed{Ask: p.ID, Err: "record session deny: " + err.Error()})
			return err
		}
		s.emit(DeniesChanged{Denies: s.cfg.Denies.AllDenies()})
	}
	ans.granted = true

	resp := response(rec)
	resp.ResponderSessionID = p.Session
	resp.RespondedAt = s.cfg.Now().UnixMilli()
	err := s.inbox.Respond(p.ID, resp)
	switch {
	case err == nil:
		s.forget(p.ID)
		s.delivered(p, resp, ans.replayed)
		s.emit(Decided{Ask: p.Ask, Response: resp, Auto: rec.Auto, Latency: s.cfg.Now().Sub(p.At), Approver: rec.Approver, Replayed: ans.replayed, Queued: p.queued})
		if len(rec.Grants) > 0 || rec.SessionDeny != nil {
			s.rejudge()
		}
		return nil
	case errors.Is(err, inbox.ErrWithdrawn), errors.Is(err, inbox.ErrNotInFlight):
		s.expire(p)
		return errGone
	case errors.Is(err, inbox.ErrAnswerUnread):
		// Not a disk fault: it is written once the child takes the earlier
		// answer, and said once (decision 0201).
		if !p.unreadReported {
			p.unreadReported = true
			s.emit(WriteFailed{Ask: p.ID, Err: unreadWait(p.Request.ID, p.earlierRun), Unread: true})
		}
		return err
	default:
		s.emit(WriteFailed{Ask: p.ID, Err: err.Error()})
		return err
	}
}

// unreadWait says why an answer waits for an earlier one to the same id.
// Replaying a decision recorded before this process started, the file is
// most likely that decision's own answer, written before a crash came
// between it and the request's removal.
func unreadWait(requestID string, earlierRun bool) string {
	if earlierRun {
		return "the answer recorded before this permtui started is already in responses/ for request id " + wire.QuoteShort(requestID) +
			" (written then, but its request was not removed before permtui stopped; or a file written there by something else, which its child reads instead); it waits for its child to take it, which ends this ask, and permtui never replaces it"
	}
	return "responses/ already holds a file for request id " + wire.QuoteShort(requestID) +
		" that no child has taken (an earlier answer, or a file written there by something else: its child reads that one first); permtui never replaces it, so this answer, recorded, is written once that one is taken"
}

// adoptRecorded replaces ans with the decision the log holds for the
// request when the log could not be looked at on arrival (it was unusable
// then and may have opened only now): a decision recorded by an earlier
// run still wins.
func (s *Server) adoptRecorded(p *pending, ans *answer) {
	if ans.audited || p.logChecked {
		return
	}
	rec, ok, looked := s.audit.recorded(keyOfRequest(p.Session, p.Request))
	switch {
	case ok:
		*ans = *replayAnswer(rec)
	case looked:
		p.logChecked = true
	}
}

// retry repeats attempt with backoff until it succeeds, the request goes
// away, or Run's context ends. A person is never asked again. It ends the
// answer's count in s.workers.
func (s *Server) retry(p *pending, ans *answer) {
	defer s.workers.Done()
	wait := retryFirst
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
		err := s.attempt(p, ans)
		if err == nil || errors.Is(err, errGone) || s.postpone(p, ans) {
			return
		}
		wait = min(wait*2, retryMax)
	}
}

// postpone hands an answer whose decision is recorded, but whose response
// could not be written, back to the inbox, which keeps only its names and
// delivers it again later under the same AskID; the audit log answers it
// then, as recorded. Held here, such answers kept their requests in memory
// and the in-flight room every session needs, so a few sessions whose
// answers cannot be written held up every other (decision 0131). An answer
// not yet recorded is retried here: nothing else knows it.
func (s *Server) postpone(p *pending, ans *answer) bool {
	if !ans.audited || !ans.granted {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asks[p.ID] != p || !s.inbox.Postpone(p.ID) {
		return false
	}
	delete(s.asks, p.ID)
	s.postponed[p.ID] = told{queued: p.queued, unreadReported: p.unreadReported}
	return true
}

// unreadableDecision handles a postponed delivery whose recorded decision
// the audit log no longer gives back (a log cut or replaced by hand): it
// is never judged again, which could give the request a second, different
// answer. It is postponed again and reported, and answered as recorded once
// the log can be read.
func (s *Server) unreadableDecision(id AskID) bool {
	s.mu.Lock()
	_, postponed := s.postponed[id]
	s.mu.Unlock()
	if !postponed {
		return false
	}
	s.inbox.Postpone(id)
	s.emit(WriteFailed{Ask: id, Err: "the decision recorded for this request cannot be read back from the audit log; it is not judged again"})
	return true
}

// expire forgets an ask whose request vanished and reports it.
func (s *Server) expire(p *pending) {
	if s.forget(p.ID) {
		s.emit(Withdrawn{Withdrawn: inbox.Withdrawn{ID: p.ID, Session: p.Session, Path: p.Path}})
	}
}

// forget removes the ask and reports whether it was still there.
func (s *Server) forget(id AskID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.asks[id]
	delete(s.asks, id)
	return ok
}
