package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/judgment"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// Judge is the recorded authority: *resolve.Policy satisfies it.
type Judge = judgment.Judge

// legacyHinter is a Judge (*resolve.Policy) that can also say what its
// policy would make of a legacy request's unverified surface and value.
type legacyHinter interface {
	LegacyHint(req *wire.Request, grants []wire.Grant) *resolve.Verdict
}

// GrantStore holds whole-session grants per served session: *grants.Store
// satisfies it.
type GrantStore interface {
	For(session string) []wire.Grant
	Add(session string, grants []wire.Grant) error
	Revoke(session string, g wire.Grant) error
	All() map[string][]wire.Grant
}

// DenyStore holds session denies per served session (decision 0104):
// *grants.Store satisfies it. Denies reports an unreadable store, so an ask
// is never judged as if nothing were denied.
type DenyStore interface {
	Denies(session string) ([]SessionDeny, error)
	AddDeny(session string, d SessionDeny) error
	RevokeDeny(session string, d SessionDeny) error
	AllDenies() map[string][]SessionDeny
}

// Config wires a Server.
type Config struct {
	Layout   wire.Layout
	Sessions []string // served ids; empty means discover
	Poll     bool     // no fsnotify: rescan every 250 ms
	StateDir string   // the audit log is <StateDir>/audit.jsonl
	Judge    func() Judge
	Grants   GrantStore
	// Denies keeps session denies; nil offers none (a relay's grants come
	// from the hub, which carries no denies).
	Denies DenyStore
	Now    func() time.Time
	Logger *slog.Logger // a file, never the terminal

	// Inbox tunes the filesystem side (timings, pid); its Layout, Sessions,
	// Poll, Deliver, Now and Logger are set from the fields above.
	Inbox inbox.Config

	// LeaveOnExit leaves the asks still waiting for a person on disk when
	// Run ends instead of denying them (decision 0041): a relay's asks wait
	// at the hub, and the next relay answers them (decision 0081).
	LeaveOnExit bool
}

// Errors of Decide.
var (
	ErrExpired         = errors.New("the request was withdrawn; nothing was written")
	ErrUnknownAsk      = errors.New("no such ask")
	ErrAlreadyDecided  = errors.New("the ask is already decided")
	ErrInvalidDecision = errors.New("invalid decision")
	ErrStopped         = errors.New("the server is not serving")
)

// IsExpired reports a Decide error meaning the ask can no longer be
// answered: its request was withdrawn, or the ask is gone.
func IsExpired(err error) bool {
	return errors.Is(err, ErrExpired) || errors.Is(err, ErrUnknownAsk)
}

// ExitReason is the denial reason given to asks still open when permtui
// stops (decision 0041).
const ExitReason = "permtui exited"

// NoApproverReason is the denial reason of an unattended decision (the
// headless front end's, decision 0045).
const NoApproverReason = "no approver is attached to permtui"

// Write retry backoff after a failed audit or response write.
const (
	retryFirst = 250 * time.Millisecond
	retryMax   = 2 * time.Second
)

// Server is the serving loop. Create it with New, consume Events, then Run.
type Server struct {
	cfg    Config
	inbox  *inbox.Inbox
	audit  *auditLog
	events *Broker
	front  <-chan Event // the front end's subscription (Events)

	mu   sync.Mutex
	asks map[AskID]*pending
	// postponed: answers handed back to the inbox unwritten (postpone), and
	// whether each ask had been queued for a person; a front end was sent
	// them, so their redelivery and withdrawal are reported as that ask's.
	postponed map[AskID]bool
	running   bool
	closing   bool
	// leaveOnExit: the person chose, on quitting, to leave the waiting asks
	// for the next server (LeaveWaitingOnExit).
	leaveOnExit bool
	stopped     bool
	ctx         context.Context // Run's context: retries stop when it is done
	workers     sync.WaitGroup  // answers and retries in progress
	work        chan job        // decided answers for the worker pool
}

type pending struct {
	Ask
	deciding bool // an answer is being written: no person may decide it
	queued   bool // it was queued for a person (AskQueued was sent)
}

// answer is a decided response with what must happen before it is written.
type answer struct {
	resp     wire.Response
	record   AuditRecord
	grants   []wire.Grant // whole-session grants to record
	deny     *SessionDeny // a session deny to record
	auto     bool
	approver string
	audited  bool
	granted  bool
	replayed bool // the decision was recorded by an earlier run (decision 0054)
}

// New prepares a server; nothing touches the filesystem until Run.
func New(cfg Config) (*Server, error) {
	if cfg.Judge == nil || cfg.Grants == nil {
		return nil, errors.New("serve: Judge and Grants are required")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("serve: no state directory for the audit log")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{cfg: cfg, asks: map[AskID]*pending{}, postponed: map[AskID]bool{}, work: make(chan job, answerQueue)}
	icfg := cfg.Inbox
	icfg.Layout, icfg.Sessions, icfg.Poll = cfg.Layout, cfg.Sessions, cfg.Poll
	icfg.Now, icfg.Logger = cfg.Now, cfg.Logger
	in, err := inbox.New(icfg)
	if err != nil {
		return nil, err
	}
	s.inbox = in
	s.events = NewBroker()
	s.front, _ = s.events.Subscribe() // read to the end by the front end
	return s, nil
}

// Events is the front end's subscription: everything the server reports,
// in order (folded only while it stalls, decision 0118); the channel closes
// after Run returns. The front end must keep reading.
func (s *Server) Events() <-chan Event { return s.front }

// Subscribe adds a subscriber beside the front end (a status line, a
// notifier): its own buffer, so it never holds up serving or the front
// end. Subscribe before Run to miss nothing; call cancel if it stops
// reading before the channel closes.
func (s *Server) Subscribe() (events <-chan Event, cancel func()) { return s.events.Subscribe() }

// Run serves until ctx is done. On the way out it denies the asks still
// waiting for a person (decision 0041), then removes the heartbeats.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running || s.stopped {
		s.mu.Unlock()
		return errors.New("serve: Run called twice")
	}
	s.running, s.ctx = true, ctx
	s.audit = newAuditLog(s.cfg.StateDir, s.emit)
	s.mu.Unlock()
	s.emitHistory()
	// Grants loaded from disk are in force from the first ask; front ends
	// hear of them now, not at the next change.
	if grants := s.cfg.Grants.All(); len(grants) > 0 {
		s.emit(GrantsChanged{Grants: grants})
	}
	if s.cfg.Denies != nil {
		if denies := s.cfg.Denies.AllDenies(); len(denies) > 0 {
			s.emit(DeniesChanged{Denies: denies})
		}
	}

	// The inbox outlives ctx briefly: exit denials are written through it
	// while the heartbeat still says we serve.
	pool := make(chan struct{})
	for range answerWorkers {
		go func() {
			defer func() { pool <- struct{}{} }()
			s.answerLoop()
		}()
	}
	inCtx, stopInbox := context.WithCancel(context.Background())
	inDone := make(chan error, 1)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ev := range s.inbox.Events() {
			s.onInbox(ev)
		}
	}()
	go func() { inDone <- s.inbox.Run(inCtx) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-inDone:
		inDone <- err
	}

	s.mu.Lock()
	s.closing = true
	var open []*pending
	for _, p := range s.asks {
		if !p.deciding && !s.cfg.LeaveOnExit && !s.leaveOnExit {
			p.deciding = true
			open = append(open, p)
		}
	}
	s.mu.Unlock()
	sortByID(open)
	for _, p := range open {
		s.answerAtExit(p, s.exitAnswer(p))
	}
	s.workers.Wait()
	close(s.work) // nothing queues an answer once closing and drained
	for range answerWorkers {
		<-pool
	}

	stopInbox()
	if ierr := <-inDone; err == nil {
		err = ierr
	}
	<-consumed
	s.audit.close()
	s.mu.Lock()
	s.running, s.stopped = false, true
	s.mu.Unlock()
	s.events.Close()
	return err
}

// onInbox turns inbox observations into judgments and events. It runs on
// Run's one consumer of the inbox's event channel, so deliveries are handled
// in order and never while the inbox holds a lock; it does no IO (answers
// are written by workers).
func (s *Server) onInbox(ev inbox.Event) {
	switch ev := ev.(type) {
	case inbox.Arrived:
		s.arrive(ev)
	case inbox.Withdrawn:
		s.withdrawn(ev)
	case inbox.Invalid:
		s.emit(Invalid{ev})
	case inbox.ServedElsewhere:
		s.emit(ServedElsewhere{ev})
	case inbox.Serving:
		s.emit(Serving{ev})
		s.reportGrantRepairs()
	case inbox.Forgotten:
		s.emit(Forgotten{ev})
	case inbox.Deferring:
		problem := ""
		if ev.Waiting > 0 {
			what := fmt.Sprintf("%d asks for a person wait", ev.Waiting)
			if ev.Waiting == 1 {
				what = "1 ask for a person waits"
			}
			problem = fmt.Sprintf("%s on disk: at most %d asks or %d MiB of requests are held for a person at once; they are shown as earlier asks are answered", what, ev.Budget.ParkedAsks, ev.Budget.ParkedBytes>>20)
		}
		s.emit(Degraded{Area: AreaMemory, Problem: problem})
	case inbox.Saturated:
		problem := ""
		if ev.Waiting > 0 {
			problem = fmt.Sprintf("%d session directories are not served: discovery serves at most %d sessions, and one with a request waiting takes the place of an idle one", ev.Waiting, ev.Max)
		}
		s.emit(Degraded{Area: AreaDiscovery, Problem: problem})
	}
}

// grantRepairer is a GrantStore (*grants.Store) that recovers damaged
// files and says so.
type grantRepairer interface{ Repairs() []string }

// reportGrantRepairs reports grants files the store found damaged and
// recovered (decision 0056).
func (s *Server) reportGrantRepairs() {
	if r, ok := s.cfg.Grants.(grantRepairer); ok {
		for _, what := range r.Repairs() {
			s.emit(Repaired{Area: AreaGrants, What: what})
		}
	}
}

// sortByID orders asks by delivery, which is arrival order.
func sortByID(ps []*pending) {
	slices.SortFunc(ps, func(a, b *pending) int { return cmp.Compare(a.ID, b.ID) })
}

func (s *Server) arrive(ev inbox.Arrived) {
	if rec, ok := s.audit.recorded(keyOfRequest(ev.Session, ev.Request)); ok {
		s.replay(ev, rec)
		return
	}
	if s.unreadableDecision(ev.ID) {
		return
	}
	a := Ask{Arrived: ev, Verdict: s.judge(ev.ID, ev.Session, ev.Request), Scopes: OfferedScopes(ev.Request)}
	s.mu.Lock()
	if s.closing {
		// Left on disk for whoever serves next; the exit denial is only for
		// asks a person had already been shown.
		s.mu.Unlock()
		return
	}
	p := &pending{Ask: a, deciding: a.Verdict.Action != resolve.Ask}
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
	s.mu.Unlock()

	s.emit(Arrived{Ask: a})
	if !p.deciding {
		// Parked: waiting for a person does not hold up automatic answers.
		s.emit(AskQueued{Ask: a})
		return
	}
	s.work <- job{p, s.ruleAnswer(p)}
}

// replay answers a request that already has a decision in the audit log
// with that decision: it is not judged, and no person is asked.
func (s *Server) replay(ev inbox.Arrived, rec AuditRecord) {
	a := Ask{Arrived: ev, Verdict: resolve.Verdict{Action: resolve.Deny, Explanation: "Decided before permtui restarted; answered as recorded."}}
	if rec.Approved {
		a.Verdict.Action = resolve.Allow
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	queued, again := s.postponed[a.ID]
	delete(s.postponed, a.ID)
	p := &pending{Ask: a, deciding: true, queued: queued}
	s.asks[a.ID] = p
	s.workers.Add(1)
	s.mu.Unlock()
	if !again {
		s.emit(Arrived{Ask: a})
	}
	s.work <- job{p, replayAnswer(rec)}
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
	v = judgment.Verdict(judge, req, grants, denies)
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
			s.recordExpiry(p)
		}
		s.emit(Withdrawn{Withdrawn: w, Pending: !p.deciding})
	}
}

// recordExpiry notes in the audit log that an ask expired waiting for a
// person. It decides nothing and is not waited for: a line lost in a crash
// only leaves the expiry out of the history.
func (s *Server) recordExpiry(p *pending) {
	rec := s.record(p, "", &answer{})
	rec.Kind = AuditExpired
	s.audit.appendAsync(rec)
}

// emit hands an event to the front end; what happened to an ask is also
// logged under its AskID.
func (s *Server) emit(ev Event) {
	switch ev := ev.(type) {
	case Decided:
		s.cfg.Logger.Info("answered", "ask", ev.Ask.ID, "request", ev.Ask.Request.ID, "session", ev.Ask.Session,
			"state", ev.Response.State, "auto", ev.Auto)
	case Withdrawn:
		s.cfg.Logger.Info("withdrawn", "ask", ev.ID, "session", ev.Session, "pending", ev.Pending)
	case WriteFailed:
		s.cfg.Logger.Warn("answer not written", "ask", ev.Ask, "err", ev.Err)
	}
	s.events.Publish(ev)
}

// Decide answers an ask a person decided. It returns once the answer is
// durable in the audit log and written, or once a failed write has been
// handed to the background retry (reported by WriteFailed events).
func (s *Server) Decide(d Decision) error {
	s.mu.Lock()
	p := s.asks[d.Ask]
	switch {
	case !s.running || s.closing:
		s.mu.Unlock()
		return ErrStopped
	case p == nil:
		s.mu.Unlock()
		return ErrUnknownAsk
	case p.deciding:
		s.mu.Unlock()
		return ErrAlreadyDecided
	}
	ans, err := s.personAnswer(p, d)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	p.deciding = true
	s.workers.Add(1)
	s.mu.Unlock()
	defer s.workers.Done()

	// Nothing is audited or granted for a request that is already gone.
	if !s.inbox.Present(p.ID) {
		s.expire(p)
		return ErrExpired
	}
	if err := s.attempt(p, ans); err != nil {
		if errors.Is(err, errGone) {
			return ErrExpired
		}
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			s.retry(p, ans)
		}()
	}
	return nil
}

// personAnswer turns a person's decision into the response and its audit
// record. The wire never sees approved_for_serving_session (ADR 0006).
func (s *Server) personAnswer(p *pending, d Decision) (*answer, error) {
	ans := &answer{resp: wire.Response{DecidedBy: wire.UserDecision()}, approver: d.Approver}
	if d.Unattended {
		if d.Scope != "" || (d.State != wire.StateDenied && d.State != wire.StateDeniedWithReason) {
			return nil, fmt.Errorf("%w: only a denial can be made with nobody attached", ErrInvalidDecision)
		}
		ans.resp.DecidedBy = wire.UnavailableDecision(NoApproverReason)
	}
	if d.Scope != "" {
		return s.scopeAnswer(p, d, ans)
	}
	if d.DenyFor != nil {
		return s.sessionDenyAnswer(p, d, ans)
	}
	switch d.State {
	case wire.StateApproved:
		ans.resp.Approved, ans.resp.State = true, wire.StateApproved
	case wire.StateDenied:
		ans.resp.State = wire.StateDenied
	case wire.StateDeniedWithReason:
		ans.resp.State = wire.StateDenied
		if reason := wire.TrimReason(d.Reason); reason != "" {
			ans.resp.State, ans.resp.DenialReason = wire.StateDeniedWithReason, reason
		}
	default:
		return nil, fmt.Errorf("%w: unknown state %q", ErrInvalidDecision, d.State)
	}
	ans.record = s.record(p, d.State, ans)
	return ans, nil
}

// scopeAnswer approves for one of the scopes the ask offers, doing exactly
// what that scope says (OfferedScopes). The audit record keeps the scope as
// a state: approved_for_session for the subagent, approved_for_serving_session
// for the whole session, which the wire never sees (ADR 0006).
func (s *Server) scopeAnswer(p *pending, d Decision, ans *answer) (*answer, error) {
	scope, ok := p.Scopes.Find(d.Scope)
	if d.State != "" || !ok {
		return nil, fmt.Errorf("%w: scope %q is not offered for this ask", ErrInvalidDecision, d.Scope)
	}
	session := d.Scope == ScopeSession || d.Scope == ScopeSessionBoth
	if d.Grants != nil && !session {
		return nil, fmt.Errorf("%w: only a whole-session grant can be edited (the child records its own)", ErrInvalidDecision)
	}
	grants := scope.Grants
	if d.Grants != nil {
		if err := s.checkEdited(p, scope.Grants, d.Grants); err != nil {
			return nil, err
		}
		grants = d.Grants
	}
	ans.resp.Approved, ans.resp.State = true, wire.StateApproved
	audited := wire.StateApprovedForSession
	switch d.Scope {
	case ScopeSubagent, ScopeSubagentBoth:
		if !predatesSessionState(p.Request) {
			ans.resp.State = wire.StateApprovedForSession
		}
		if d.Scope == ScopeSubagentBoth {
			ans.resp.SessionGrantWidth = wire.GrantWidthFamily
		}
	case ScopeSession, ScopeSessionBoth:
		audited, ans.grants = wire.StateApprovedForServingSession, grants
	}
	ans.record = s.record(p, audited, ans)
	return ans, nil
}

// sessionDenyAnswer denies the ask with the person's reason and records the
// deny for the root session, if it names the ask's surface (or its family)
// and its pattern covers the ask: a deny nobody saw match is refused.
func (s *Server) sessionDenyAnswer(p *pending, d Decision, ans *answer) (*answer, error) {
	g, reason := *d.DenyFor, wire.TrimReason(d.Reason)
	ai := p.Request.AccessIntent
	switch {
	case s.cfg.Denies == nil:
		return nil, fmt.Errorf("%w: session denies are not kept here", ErrInvalidDecision)
	case d.Unattended || d.State != wire.StateDeniedWithReason || reason == "":
		return nil, fmt.Errorf("%w: a deny for the session is a person's denial with a reason", ErrInvalidDecision)
	case ai == nil:
		return nil, fmt.Errorf("%w: the request carries no facts, so no later ask could be matched", ErrInvalidDecision)
	case strings.TrimSpace(g.Pattern) == "" || !s.cfg.Judge().Covers(p.Request, g):
		return nil, fmt.Errorf("%w: the deny's surface and pattern do not cover this ask", ErrInvalidDecision)
	}
	if fam, _ := resolve.Family(ai.Surface); g.Surface != ai.Surface && g.Surface != fam {
		return nil, fmt.Errorf("%w: a session deny names the ask's surface %q or its family", ErrInvalidDecision, ai.Surface)
	}
	ans.resp.State, ans.resp.DenialReason = wire.StateDeniedWithReason, reason
	ans.deny = &SessionDeny{Grant: g, Reason: reason}
	ans.record = s.record(p, wire.StateDeniedWithReason, ans)
	return ans, nil
}

// checkEdited accepts a person's edit of a scope's grants only when it keeps
// their surfaces and the policy, judging the ask with exactly those grants,
// allows it: an edited pattern that no longer covers the ask would record a
// grant nobody looked at working.
func (s *Server) checkEdited(p *pending, offered, edited []wire.Grant) error {
	if len(edited) != len(offered) {
		return fmt.Errorf("%w: %d edited grants for %d offered", ErrInvalidDecision, len(edited), len(offered))
	}
	for i, g := range edited {
		if g.Surface != offered[i].Surface || strings.TrimSpace(g.Pattern) == "" {
			return fmt.Errorf("%w: an edited grant must keep its surface %q and have a pattern", ErrInvalidDecision, offered[i].Surface)
		}
	}
	if v := s.cfg.Judge().Resolve(p.Request, edited); v.Action != resolve.Allow {
		return fmt.Errorf("%w: the edited pattern does not cover this ask (the policy says %s with it)", ErrInvalidDecision, v.Action)
	}
	return nil
}

// ruleAnswer answers from the verdict of the recorded authority.
func (s *Server) ruleAnswer(p *pending) *answer {
	v := p.Verdict
	ans := &answer{auto: true, resp: wire.Response{DecidedBy: v.DecidedBy()}}
	state := wire.StateDenied
	switch {
	case v.Action == resolve.Allow:
		ans.resp.Approved, ans.resp.State = true, wire.StateApproved
		state = wire.StateApproved
	case wire.TrimReason(v.Reason) != "":
		ans.resp.State, ans.resp.DenialReason = wire.StateDeniedWithReason, wire.TrimReason(v.Reason)
		state = wire.StateDeniedWithReason
	default:
		ans.resp.State = wire.StateDenied
	}
	ans.record = s.record(p, state, ans)
	return ans
}

// HistoryCap is how many decisions from earlier runs History carries.
const HistoryCap = 500

// emitHistory reports the last decisions of earlier runs from the audit
// log, so a restarted console's log is not empty. Unreadable history is
// only logged: it decides nothing.
func (s *Server) emitHistory() {
	f, err := os.Open(filepath.Join(s.cfg.StateDir, "audit.jsonl"))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.cfg.Logger.Warn("audit history unreadable", "err", err)
		}
		return
	}
	defer f.Close()
	var recs []AuditRecord
	if _, err := ReadAuditHistory(f, func(r AuditRecord) {
		recs = append(recs, r)
		if len(recs) > 2*HistoryCap {
			recs = append(recs[:0], recs[len(recs)-HistoryCap:]...)
		}
	}); err != nil {
		s.cfg.Logger.Warn("audit history unreadable", "err", err)
	}
	if len(recs) > HistoryCap {
		recs = recs[len(recs)-HistoryCap:]
	}
	if len(recs) > 0 {
		s.emit(History{Records: recs})
	}
}

// LeaveWaitingOnExit makes Run, when it stops, leave the asks still waiting
// for a person on disk for the next server instead of denying them
// (decision 0041's default): the console's quit choice.
func (s *Server) LeaveWaitingOnExit() {
	s.mu.Lock()
	s.leaveOnExit = true
	s.mu.Unlock()
}

// exitAnswer denies an ask still open when permtui stops.
func (s *Server) exitAnswer(p *pending) *answer {
	ans := &answer{resp: wire.Response{
		State:        wire.StateDeniedWithReason,
		DenialReason: ExitReason,
		DecidedBy:    wire.UnavailableDecision(ExitReason),
	}}
	ans.record = s.record(p, wire.StateDeniedWithReason, ans)
	return ans
}

func (s *Server) record(p *pending, state wire.State, ans *answer) AuditRecord {
	req := p.Request
	rec := AuditRecord{
		AskID:             p.ID,
		RequestID:         req.ID,
		ServedSession:     p.Session,
		RequesterSession:  req.RequesterSessionID,
		Agent:             req.RequesterAgentName,
		Surface:           SurfaceOf(req),
		State:             state,
		Approved:          ans.resp.Approved,
		DecidedBy:         ans.resp.DecidedBy,
		Reason:            ans.resp.DenialReason,
		Grants:            ans.grants,
		SessionDeny:       ans.deny,
		SessionGrantWidth: ans.resp.SessionGrantWidth,
		CreatedAt:         req.CreatedAt,
		DecidedAt:         s.cfg.Now().UnixMilli(),
		Auto:              ans.auto,
		Facts:             auditFacts(req.AccessIntent),
		Approver:          ans.approver,
	}
	if req.AccessIntent != nil {
		rec.MatchValues = req.AccessIntent.MatchValues
	}
	if ans.resp.State != state {
		rec.WireState = ans.resp.State
	}
	return rec
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

// errGone: the request vanished; the ask was reported withdrawn.
var errGone = errors.New("request gone")

// answerWorkers answer automatic decisions: a fixed pool, so a burst
// creates no goroutine (and grows no stack) per request, and enough of them
// that the audit log's group commit shares each fsync (issue 9).
const answerWorkers = 32

// answerQueue holds decided asks waiting for a worker; when it is full the
// inbox's consumer waits, and requests wait on disk.
const answerQueue = 1024

// job is a decided ask and its answer, for a worker to write.
type job struct {
	p   *pending
	ans *answer
}

// answerLoop is one worker: it writes each queued answer; a
// failed write is retried on its own goroutine, never holding a worker.
func (s *Server) answerLoop() {
	for j := range s.work {
		p, ans := j.p, j.ans
		if err := s.attempt(p, ans); err != nil && !errors.Is(err, errGone) && !s.postpone(p, ans) {
			go func() {
				defer s.workers.Done()
				s.retry(p, ans)
			}()
			continue
		}
		s.workers.Done()
	}
}

// answerAtExit writes an answer once, without retrying: at exit there is
// no later to retry in.
func (s *Server) answerAtExit(p *pending, ans *answer) {
	_ = s.attempt(p, ans)
}

// attempt makes the decision durable in the audit log, records its grants,
// then writes the response. Each step runs once per answer, so a retry
// neither audits nor grants twice. Failures are reported as WriteFailed.
func (s *Server) attempt(p *pending, ans *answer) error {
	if !ans.audited {
		// The log may have opened only now (it was unusable at arrival):
		// a decision recorded by an earlier run still wins.
		if rec, ok := s.audit.recorded(keyOfRequest(p.Session, p.Request)); ok {
			*ans = *replayAnswer(rec)
		}
	}
	if !ans.audited {
		if err := s.audit.append(ans.record); err != nil {
			s.emit(WriteFailed{Ask: p.ID, Err: err.Error()})
			return err
		}
		ans.audited = true
	}
	if !ans.granted && len(ans.grants) > 0 {
		if err := s.cfg.Grants.Add(p.Session, ans.grants); err != nil {
			s.emit(WriteFailed{Ask: p.ID, Err: "record grants: " + err.Error()})
			return err
		}
		s.emit(GrantsChanged{Grants: s.cfg.Grants.All()})
	}
	if !ans.granted && ans.deny != nil && s.cfg.Denies != nil {
		if err := s.cfg.Denies.AddDeny(p.Session, *ans.deny); err != nil {
			s.emit(WriteFailed{Ask: p.ID, Err: "record session deny: " + err.Error()})
			return err
		}
		s.emit(DeniesChanged{Denies: s.cfg.Denies.AllDenies()})
	}
	ans.granted = true

	resp := ans.resp
	resp.ResponderSessionID = p.Session
	resp.RespondedAt = s.cfg.Now().UnixMilli()
	err := s.inbox.Respond(p.ID, resp)
	switch {
	case err == nil:
		s.forget(p.ID)
		s.delivered(p, resp, ans.replayed)
		s.emit(Decided{Ask: p.Ask, Response: resp, Auto: ans.auto, Latency: s.cfg.Now().Sub(p.At), Approver: ans.approver, Replayed: ans.replayed, Queued: p.queued})
		if len(ans.grants) > 0 || ans.deny != nil {
			s.rejudge()
		}
		return nil
	case errors.Is(err, inbox.ErrWithdrawn), errors.Is(err, inbox.ErrNotInFlight):
		s.expire(p)
		return errGone
	default:
		s.emit(WriteFailed{Ask: p.ID, Err: err.Error()})
		return err
	}
}

// retry repeats attempt with backoff until it succeeds, the request goes
// away, or Run's context ends. A person is never asked again.
func (s *Server) retry(p *pending, ans *answer) {
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
	s.postponed[p.ID] = p.queued
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

// rejudge asks the recorded authority again about every ask still waiting
// for a person; those it now decides are answered automatically.
func (s *Server) rejudge() {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	// Asks waiting on disk beyond the parked budget are judged again as the
	// inbox delivers them.
	s.inbox.Rejudge()
	waiting := make([]*pending, 0, len(s.asks))
	for _, p := range s.asks {
		if !p.deciding {
			waiting = append(waiting, p)
		}
	}
	s.mu.Unlock()
	sortByID(waiting)
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
		s.work <- job{p, s.ruleAnswer(p)}
	}
}

// PolicyLoaded reports a (re)loaded policy and re-judges pending asks.
// noFile says that no policy file was found and where permtui looked, or is
// empty.
func (s *Server) PolicyLoaded(problems []string, noFile string) {
	s.emit(PolicyStatus{Problems: problems, NoAutoAllow: len(problems) > 0, NoFile: noFile})
	s.rejudge()
}

// GrantsUpdated reports whole-session grants changed outside the server
// (a relay's grants from the hub) and re-judges pending asks with them.
func (s *Server) GrantsUpdated() {
	s.emit(GrantsChanged{Grants: s.cfg.Grants.All()})
	s.rejudge()
}

// RevokeGrant withdraws a whole-session grant; later asks are judged
// without it.
func (s *Server) RevokeGrant(session string, g wire.Grant) error {
	if err := s.cfg.Grants.Revoke(session, g); err != nil {
		return err
	}
	s.recordRevocation(AuditRecord{ServedSession: session, Surface: g.Surface, Grants: []wire.Grant{g}})
	s.emit(GrantsChanged{Grants: s.cfg.Grants.All()})
	return nil
}

// recordRevocation notes a revocation in the audit log for the console's
// log after a restart. Like an expiry it decides nothing and is not waited
// for; before Run there is no log to note it in.
func (s *Server) recordRevocation(rec AuditRecord) {
	s.mu.Lock()
	audit := s.audit
	s.mu.Unlock()
	if audit != nil {
		rec.Kind, rec.DecidedAt = AuditRevoked, s.cfg.Now().UnixMilli()
		audit.appendAsync(rec)
	}
}

// RevokeDeny withdraws a session deny; later asks are judged without it.
func (s *Server) RevokeDeny(session string, d SessionDeny) error {
	if s.cfg.Denies == nil {
		return errors.New("serve: session denies are not kept here")
	}
	if err := s.cfg.Denies.RevokeDeny(session, d); err != nil {
		return err
	}
	s.recordRevocation(AuditRecord{ServedSession: session, Surface: d.Grant.Surface, SessionDeny: &d})
	s.emit(DeniesChanged{Denies: s.cfg.Denies.AllDenies()})
	return nil
}
