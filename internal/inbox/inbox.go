// Package inbox is the filesystem side of serving: it finds the session
// inboxes permtui serves, watches their requests/ directories, delivers each
// valid request once, rejects invalid ones as the protocol says, publishes the
// serving heartbeat, and writes responses atomically.
package inbox

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/budget"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/watch"
	"github.com/permtui/permtui/internal/wire"
)

// Default timings. Rescans are the safety net under fsnotify (each tick
// rescans a rotating 1/safetyRounds of the sessions) and the only mechanism
// in poll mode; heartbeats follow pi's 1 s refresh.
const (
	DefaultRescan            = time.Second
	DefaultPollRescan        = 250 * time.Millisecond
	DefaultHeartbeatInterval = time.Second
	DefaultContentionRecheck = 2 * time.Second
	DefaultLockRecheck       = 250 * time.Millisecond
	DefaultMaxDiscovered     = 1024
)

// Config says which inboxes to serve and how.
type Config struct {
	Layout wire.Layout
	// Sessions are the served ids. Empty means: discover every session
	// directory under sessions/, including ones created later.
	Sessions []string
	// Poll disables fsnotify and rescans every PollRescan instead.
	Poll bool

	Now    func() time.Time
	Logger *slog.Logger
	PID    int // heartbeat pid; os.Getpid() when zero

	// MaxDiscovered bounds how many sessions discovery serves (default
	// DefaultMaxDiscovered): each costs a heartbeat write a second.
	MaxDiscovered int
	// MaxListed bounds the names one scan reads of a requests/ directory
	// (zero: 4096, decision 0046), so memory stays flat however many files
	// a child creates; later scans read the rest.
	MaxListed int

	Rescan            time.Duration
	PollRescan        time.Duration
	HeartbeatInterval time.Duration
	ContentionRecheck time.Duration
	// LockRecheck is how often a session another permtui holds is tried
	// again (default DefaultLockRecheck).
	LockRecheck time.Duration

	// Budget bounds the request data held in memory (zero fields: the
	// defaults of DefaultBudget).
	Budget Budget
}

// eventBuffer lets a scan run ahead of a busy consumer; watchBuffer holds
// fsnotify events while a scan runs, and bounds the events of one change.
const (
	eventBuffer = 256
	watchBuffer = 4096
)

// Event is something the inbox observed.
type Event interface{ inboxEvent() }

// AskID names one delivery of a request. The inbox mints it when it delivers
// a request and never reuses it in this process, so a later request under the
// same file name (a child that retries with the same id) is a different ask.
// Every layer above names the ask by it: the serving loop, its events, the
// front ends, the audit record and the log.
type AskID uint64

// Arrived: a valid request routed to a served session, delivered once.
type Arrived struct {
	ID      AskID
	Session string // served id
	Path    string // the request file
	Request *wire.Request
	At      time.Time
	Size    int64 // bytes of the request file
	// File is the identity of the file read: another file under Path is
	// another delivery (decision 0111).
	File safefs.FileID
}

// Withdrawn: a delivered request's file vanished before it was answered.
type Withdrawn struct {
	ID      AskID
	Session string
	Path    string
	// Replaced: another file took its name (the child wrote its request
	// again); that file is read as a new ask.
	Replaced bool
}

// Invalid: a request file was refused (and removed where the spec says so).
type Invalid struct {
	Session string
	Path    string
	Reason  string
}

// ServedElsewhere: another live node holds a fresh heartbeat for the id.
type ServedElsewhere struct {
	Session string
	PID     int  // 0 when the holder has not published its record yet
	Permtui bool // another permtui holds the session's lock (else a pi node)
}

// Forgotten: discovery no longer knows the session (its directory is gone,
// or it was idle and made room for one with a request waiting).
type Forgotten struct{ Session string }

// Saturated: Waiting session directories are not served because discovery
// knows MaxDiscovered sessions (reported when the number changes; Waiting 0:
// every directory is known again).
type Saturated struct{ Max, Waiting int }

// Serving: permtui now publishes the heartbeat for the id and serves it.
type Serving struct{ Session string }

// Scanned follows the first look at every session served at start, after
// the events of what it found. Whole: no request file was then left unread
// or waiting on disk (for room, a discovery slot, its id's earlier
// request), so every request on disk was delivered.
type Scanned struct{ Whole bool }

func (Arrived) inboxEvent()         {}
func (Withdrawn) inboxEvent()       {}
func (Invalid) inboxEvent()         {}
func (ServedElsewhere) inboxEvent() {}
func (Serving) inboxEvent()         {}
func (Saturated) inboxEvent()       {}
func (Forgotten) inboxEvent()       {}
func (Scanned) inboxEvent()         {}

// Inbox serves the configured session inboxes. Create it with New, then Run.
type Inbox struct {
	cfg      Config
	discover bool
	kick     chan struct{} // requests the scans queued in scanAll and scanQ
	events   chan Event    // closed when Run returns
	stopping <-chan struct{}

	mu       sync.Mutex
	sessions map[string]*sessionState // known ids
	inflight map[string]*entry        // delivered, unanswered requests by path
	byID     map[AskID]*entry         // the same entries by delivery
	reported map[string]string        // paths refused but not removable: reason reported
	byReq    map[reqKey]*entry        // unanswered entries by session and request id
	lastID   AskID                    // the last delivery minted
	// What the budget counts (budget.go), over all sessions: entries
	// parked for a person, deferred and in flight (with their file bytes),
	// and postponed.
	parked, deferred, flight budget.Budget
	postponed                int
	deferReports             budget.Spacing  // when the next Deferring is due
	reportSoon               bool            // a timer wakes the loop for a spaced Deferring
	rejudged                 int             // deferred asks a Rejudge released, to report first
	rejudging                int             // entries rejudging: they still wait, as deferred
	waitingRoom              bool            // sessions wait for a global bound
	scanAll                  bool            // a full scan is queued
	scanQ                    map[string]bool // sessions queued for a scan
	cache                    bool            // directories are cached: fsnotify runs, Run has not returned
	running                  bool
	waiting                  int // session directories waiting for a discovery slot (reported)
	backlogged               int // names kept in every session's backlog

	hbMu   sync.Mutex  // serializes heartbeat claims, refreshes and removal
	hbDir  *safefs.Dir // serving/, kept open; hbMu guards
	noSwap bool        // serving/ cannot exchange names; hbMu guards
}

type sessionState struct {
	serving      bool
	lock         *safefs.FileLock // serving/<enc(id)>.lock, flocked while we serve it
	elsewhere    bool             // another node serves it (reported)
	otherPID     int              // the live pid serving it elsewhere (0: not known yet)
	otherPermtui bool             // that node is another permtui (it holds the lock)
	nextClaim    time.Time        // when to look at a foreign heartbeat again
	published    bool             // we wrote a heartbeat for it
	badDir       string           // a refused session root or requests/, reported once
	idle         bool             // the last scan found no request file on disk
	vanished     bool             // served, and discovery found its directory gone
	dirs         *dirs            // open directories while valid
	beat         *safefs.Swap     // the files behind our heartbeat; hbMu guards
	flight       budget.Budget    // in-flight entries of the session (not parked or deferred), their file bytes
	deferred     budget.Budget    // its deferred entries
	junkDirs     int              // directories named *.json in requests/ (reported)
	waiting      bool             // requests wait on disk for a free slot
	waitingID    bool             // a request waits for its id's earlier request
	backlog      backlog          // names seen while there was no room (backlog.go)
}

type entry struct {
	ask       AskID
	session   string
	path      string        // the request file
	name      string        // its file name in requests/
	file      safefs.FileID // the file delivered; another under name is another ask
	reqID     string        // the request's id, which names the response file
	answering bool          // a response write is in progress: vanishing is not withdrawal
	answered  bool          // response written; forget the entry once the file is gone
	parked    bool          // waiting for a person: not counted in its session's in-flight bound
	deferred  bool          // waiting for a person on disk, beyond the parked budget
	postponed bool          // decided, its response not written: on disk until due
	rejudge   bool          // deferred, to be judged again (Rejudge)
	rejudging bool          // taken off the disk to be judged again, not yet judged
	due       time.Time     // when a postponed entry is delivered again
	tries     int           // times it was postponed
	size      int64         // bytes of the file delivered
}

// New checks the configuration and prepares an inbox.
func New(cfg Config) (*Inbox, error) {
	if cfg.Layout.Root == "" {
		return nil, errors.New("inbox: no forwarding root")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.PID = cmp.Or(cfg.PID, os.Getpid())
	setDefault(&cfg.MaxDiscovered, DefaultMaxDiscovered)
	setDefault(&cfg.Rescan, DefaultRescan)
	setDefault(&cfg.PollRescan, DefaultPollRescan)
	setDefault(&cfg.HeartbeatInterval, DefaultHeartbeatInterval)
	setDefault(&cfg.ContentionRecheck, DefaultContentionRecheck)
	setDefault(&cfg.LockRecheck, DefaultLockRecheck)
	cfg.Budget = cfg.Budget.WithDefaults()
	setDefault(&cfg.MaxListed, maxListed)

	in := &Inbox{
		cfg:      cfg,
		discover: len(cfg.Sessions) == 0,
		kick:     make(chan struct{}, 1),
		events:   make(chan Event, eventBuffer),
		sessions: map[string]*sessionState{},
		inflight: map[string]*entry{},
		byID:     map[AskID]*entry{},
		byReq:    map[reqKey]*entry{},
		scanQ:    map[string]bool{},
		reported: map[string]string{},
	}
	in.setBudgets()
	for _, raw := range cfg.Sessions {
		id, ok := wire.NormalizeSessionID(raw)
		if !ok {
			return nil, errors.New("inbox: unusable session id " + wire.QuoteShort(raw))
		}
		in.sessions[id] = in.newSession()
	}
	return in, nil
}

// Run serves until ctx is done, then removes the heartbeats it published.
func (in *Inbox) Run(ctx context.Context) error {
	in.mu.Lock()
	if in.running {
		in.mu.Unlock()
		return errors.New("inbox: already running")
	}
	in.running = true
	in.mu.Unlock()
	in.stopping = ctx.Done()
	defer close(in.events) // after every goroutine that emits has ended

	// The watches are in place before the first scan (the first change of
	// the loop says so), so nothing created in between is missed.
	w := newWatcher(ctx, in.cfg)
	defer func() {
		<-w.Done() // the loop ends with ctx and releases its watches
		// Answers written after Run (the exit denials) open their
		// directories each time; releasing the sessions drops the cached.
		in.mu.Lock()
		in.cache = false
		in.mu.Unlock()
		in.withdrawHeartbeats()
	}()

	in.mu.Lock()
	in.cache = !w.Polling() // without events nothing would tell a cached directory is stale
	in.mu.Unlock()
	in.claimKnown()
	<-w.Changes() // Lost: the first full look
	in.scan(w)
	in.mu.Lock()
	whole := !in.behind()
	in.mu.Unlock()
	in.emit(Scanned{Whole: whole})

	var heartbeats sync.WaitGroup
	heartbeats.Go(func() { in.heartbeatLoop(ctx) })
	defer heartbeats.Wait()

	for round := 0; ; {
		select {
		case <-ctx.Done():
			return nil
		case c, ok := <-w.Changes():
			switch {
			case !ok:
				return nil
			case c.Lost, c.Tick && w.Polling():
				// An overflow lost events; a full scan recovers them.
				in.scan(w)
			default:
				for _, ev := range c.Events {
					in.handle(w, ev)
				}
				if c.Tick {
					in.safetyNet(w, round)
					round++
				}
			}
		case <-in.kick:
			in.scanQueued(w)
		}
		in.redeliver()
		in.reportDeferring()
	}
}

// behind reports whether a request file may be on disk and not delivered:
// unread for lack of room, a discovery slot or its id's earlier request,
// kept in a backlog, deferred or being judged again. in.mu is held.
func (in *Inbox) behind() bool {
	if in.deferred.Count() > 0 || in.rejudging > 0 || in.backlogged > 0 || in.waiting > 0 || in.waitingRoom {
		return true
	}
	for _, s := range in.sessions {
		if s.waiting || s.waitingID {
			return true
		}
	}
	return false
}

// sessionIDs lists the known sessions that keep accepts (nil: all of
// them), sorted.
func (in *Inbox) sessionIDs(keep func(*sessionState) bool) []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	ids := make([]string, 0, len(in.sessions))
	for id, s := range in.sessions {
		if keep == nil || keep(s) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Events delivers what the inbox observes, in order, from the start of Run
// until it returns; then the channel is closed. The consumer must keep
// reading: a full channel holds up scanning (never while an inbox lock is
// held). It may call Respond and Present.
func (in *Inbox) Events() <-chan Event { return in.events }

// emit sends an event; once Run's context is done, events nobody will read
// are dropped. Callers hold no inbox lock.
func (in *Inbox) emit(ev Event) {
	select {
	case in.events <- ev:
	case <-in.stopping:
	}
}

// scanSoon queues a scan of one session.
func (in *Inbox) scanSoon(id string) {
	in.mu.Lock()
	in.scanQ[id] = true
	in.mu.Unlock()
	in.wake()
}

func (in *Inbox) wake() {
	select {
	case in.kick <- struct{}{}:
	default:
	}
}

// watcher is the shared watch loop (decision 0003) over sessions/, each
// served session root and its requests/, with the inbox's map from a watched
// directory to its session. The Run goroutine alone uses the maps.
type watcher struct {
	*watch.Watcher
	reqDirs map[string]string // watched requests/ path → session id
	roots   map[string]string // watched session root → session id
	failed  map[string]bool   // sessions whose requests/ could not be watched
}

func newWatcher(ctx context.Context, cfg Config) *watcher {
	return &watcher{
		Watcher: watch.New(ctx, watch.Config{
			Rescan: cfg.Rescan, PollRescan: cfg.PollRescan, Poll: cfg.Poll,
			MaxEvents: watchBuffer, Logger: cfg.Logger,
		}, cfg.Layout.SessionsDir()),
		reqDirs: map[string]string{}, roots: map[string]string{}, failed: map[string]bool{},
	}
}

// watch adds a directory watch unless the map says it is there; force adds
// it anyway (a safety-net rescan: the directory may have been replaced).
func (w *watcher) watch(m map[string]string, dir, id string, force bool) error {
	if w.Polling() {
		return nil
	}
	if _, ok := m[dir]; ok && !force {
		return nil
	}
	if err := w.AddDir(dir); err != nil {
		return err // a directory that vanished meanwhile is rescanned later
	}
	m[dir] = id
	return nil
}

// forget drops the watch bookkeeping of a directory that was removed or
// renamed away.
func (w *watcher) forget(dir string) {
	for _, m := range []map[string]string{w.reqDirs, w.roots} {
		if _, ok := m[dir]; ok {
			delete(m, dir)
			w.Remove(dir)
		}
	}
}
