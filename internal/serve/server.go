package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
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

// locator is a Judge (*resolve.Policy) that finds, by IO, where a
// request's cwd lies against its project before it is judged (decision 0257).
type locator interface{ Locate(cwd string) }

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
	// ErrScopesChanged: a scope chosen from scopes a policy change judged
	// again since (decision 0229); nothing is recorded and the ask stays
	// for a person, shown the new ones (ScopesChanged).
	ErrScopesChanged = fmt.Errorf("%w: the policy changed since this choice was shown, and what its grants reach is no longer what was named; approve once or deny", ErrInvalidDecision)
	// ErrDelivering: a hub approver's Decide that the hub has not
	// confirmed (it is away, or its stream is electing a leader); the
	// approver keeps sending it, in memory only.
	ErrDelivering = errors.New("the hub has not confirmed the decision yet; permtui keeps sending it until it does or the ask ends")
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
	// rejudges counts rejudge calls: an arrival judged across one is
	// judged again (arrive).
	rejudges atomic.Uint64
	// postponed: answers handed back to the inbox unwritten (postpone), and
	// what a front end was told of each; it was sent them, so their
	// redelivery and withdrawal are reported as that ask's.
	postponed map[AskID]told
	closing   bool            // Run is stopping, or has stopped
	ctx       context.Context // Run's, nil before it: retries stop when it is done
	workers   sync.WaitGroup  // answers and retries in progress
	ready     []job           // answers decided by the inbox consumer in its current batch; only it uses them
	answering answerQueue     // decided answers waiting for the answerer
}

type pending struct {
	Ask
	deciding bool // an answer is being written: no person may decide it
	queued   bool // it was queued for a person (AskQueued was sent)
	// logChecked: the audit log's index had no decision for it at
	// arrival, so none can appear before it is answered (its session is
	// ours).
	logChecked bool
	// unreadReported: a WriteFailed said its answer waits for an earlier
	// one its child has not read (decision 0201); the retries say nothing.
	unreadReported bool
	// earlierRun: it replays a decision recorded before this process
	// started, so an answer unread under its id is most likely that one,
	// written before a crash kept its request from being removed (decision
	// 0276).
	earlierRun bool
}

// told is what a front end was told of a postponed ask.
type told struct {
	queued         bool // it was queued for a person
	unreadReported bool // pending.unreadReported
}

// answer is a decision, as its audit record says it (the response, the
// grants or session deny to record: response derives what is written, for
// the first delivery as for a replay), and how far it got.
type answer struct {
	record  AuditRecord
	audited bool
	granted bool
	// unaudited: a WriteFailed said the audit log refused it; its retries
	// say nothing more (the log's health is reported once, as degraded).
	unaudited bool
	replayed  bool // the decision was recorded by an earlier run (decision 0054)
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
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	s := &Server{cfg: cfg, asks: map[AskID]*pending{}, postponed: map[AskID]told{}, answering: answerQueue{ready: make(chan struct{}, 1)}}
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
	if s.ctx != nil {
		s.mu.Unlock()
		return errors.New("serve: Run called twice")
	}
	s.ctx = ctx
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
	inCtx, stopInbox := context.WithCancel(context.Background())
	inDone := make(chan error, 1)
	var consumed, answered sync.WaitGroup
	consumed.Go(func() { s.consume(s.inbox.Events()) })
	answered.Go(s.answerer)
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
		if !p.deciding && !s.cfg.LeaveOnExit {
			p.deciding = true
			open = append(open, p)
		}
	}
	s.mu.Unlock()
	sortByID(open)
	for _, p := range open {
		_ = s.attempt(p, s.exitAnswer(p)) // once: at exit there is no later to retry in
	}
	s.workers.Wait()

	stopInbox()
	if ierr := <-inDone; err == nil {
		err = ierr
	}
	consumed.Wait()
	s.answering.close()
	answered.Wait()
	s.audit.close()
	s.events.Close()
	return err
}

// consumeBatch bounds the events taken together, so the first answer of a
// batch waits for at most this many judgments.
const consumeBatch = 256

// consume is Run's one consumer of the inbox's events: it takes every event
// ready at once and hands the automatic decisions among them to the
// answerer together.
func (s *Server) consume(events <-chan inbox.Event) {
	for ev := range events {
		s.onInbox(ev)
	batch:
		for range consumeBatch - 1 {
			select {
			case ev, ok := <-events:
				if !ok {
					break batch
				}
				s.onInbox(ev)
			default:
				break batch
			}
		}
		s.answering.put(s.ready)
		s.ready = s.ready[:0]
	}
}

// onInbox turns inbox observations into judgments and events, in order and
// never while the inbox holds a lock; automatic answers wait in s.ready.
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
	case inbox.Scanned:
		// Asks beyond the memory budget went back to disk as they were judged.
		s.emit(Scanned{Whole: ev.Whole && s.inbox.Usage().DeferredAsks == 0})
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

// replay answers a request that already has a decision in the audit log
// with that decision: it is not judged, and no person is asked.
func (s *Server) replay(ev inbox.Arrived, rec AuditRecord) {
	a := Ask{Arrived: ev, Verdict: resolve.Verdict{Action: resolve.Deny, Explanation: "Decided before permtui restarted; answered as recorded."}}
	if rec.Approved {
		a.Verdict.Action = resolve.Allow
	}
	earlier := s.audit.earlierRun(keyOfRequest(ev.Session, ev.Request))
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	was, again := s.postponed[a.ID]
	delete(s.postponed, a.ID)
	p := &pending{Ask: a, deciding: true, queued: was.queued, unreadReported: was.unreadReported, earlierRun: earlier}
	s.asks[a.ID] = p
	s.workers.Add(1)
	s.mu.Unlock()
	if !again {
		s.emit(Arrived{Ask: a})
	}
	s.ready = append(s.ready, job{p, replayAnswer(rec)})
}

// emit hands an event to the front end; what happened to an ask is also
// logged under its AskID.
func (s *Server) emit(ev Event) {
	switch ev := ev.(type) {
	case Decided:
		if ev.Auto {
			break // audit.jsonl has it under the same askId; a log write per answer cost a syscall each (issue 23)
		}
		s.cfg.Logger.Info("answered", "ask", ev.Ask.ID, "request", ev.Ask.Request.ID, "session", ev.Ask.Session,
			"state", ev.Response.State, "auto", ev.Auto)
	case Withdrawn:
		s.cfg.Logger.Info("withdrawn", "ask", ev.ID, "session", ev.Session, "pending", ev.Pending)
	case WriteFailed:
		s.cfg.Logger.Warn("answer not written", "ask", ev.Ask, "err", ev.Err)
	}
	s.events.Publish(ev)
}

// HistoryCap is how many decisions from earlier runs History carries.
const HistoryCap = 500

// emitHistory reports the last decisions of earlier runs from the audit
// log, so a restarted console's log is not empty. Unreadable history is
// only logged: it decides nothing.
func (s *Server) emitHistory() {
	var recs []AuditRecord
	if _, err := ReadAuditHistory(AuditPath(s.cfg.StateDir), func(r AuditRecord) {
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
// (decision 0041's default): the console's quit choice, as Config.LeaveOnExit.
func (s *Server) LeaveWaitingOnExit() {
	s.mu.Lock()
	s.cfg.LeaveOnExit = true
	s.mu.Unlock()
}
