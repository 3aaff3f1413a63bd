package relay

import (
	"bytes"
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/budget"
	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// ErrNotReady: the approver has not reached the hub yet.
var ErrNotReady = errors.New("relay: not attached to the hub yet")

const hubTimeout = 5 * time.Second

// askPullBatch is how many asks the approver asks the hub for at once, so
// the messages its client has pulled and not yet taken in are at most 16 of
// hub.MaxAskBytes (17 MiB), bounded by JetStream; nats.go's default, 500,
// let a backlog overrun the client's buffer (decision 0196).
const askPullBatch = 16

// Approver attaches a console or headless approver to the hub: it is a
// serve.Source whose events are the asks of every relay (with their host)
// and whose Decide records the decision in the decisions bucket, where the
// first decision for an ask is the only one. It shows at most a budget of
// asks at once; the rest wait at the hub (decision 0127).
type Approver struct {
	name   string
	js     jetstream.JetStream
	log    *slog.Logger
	events *serve.Broker      // every subscriber's events
	front  <-chan serve.Event // the front end's subscription (Events)
	now    func() time.Time
	budget inbox.Budget
	room   chan struct{} // wakes refill
	replay chan struct{} // wakes Run to read the stream again from replayFrom

	senders sync.WaitGroup // keepSending, until Run returns

	mu        sync.Mutex
	run       context.Context      // Run's
	sending   map[serve.AskID]bool // unconfirmed decisions being sent again
	decisions jetstream.KeyValue
	grantsKV  jetstream.KeyValue
	stream    jetstream.Stream
	gen       int // of the consumer whose messages onAsk takes
	next      serve.AskID
	byKey     map[string]*hubAsk // host.key: every open ask kept, shown or waiting
	hostOf    map[string]string  // key → the host of its latest copy in byKey
	byID      map[serve.AskID]*hubAsk
	closed    map[string]uint64                  // host.key of asks answered, withdrawn or moved: the stream sequence that closed it
	grants    map[string]map[string][]wire.Grant // session → host → its grants
	memory    memoryState
	// While the stream is read up to where it ended when the consumer was
	// made (replayTo, 0 once there), the asks read are held back, not
	// shown: their gone messages may follow, and an ask answered long
	// ago must not be shown as queued then decided.
	replayTo uint64
	heldBack map[serve.AskID]*hubAsk
}

// hubAsk is an open ask. While it waits only its name is kept (elem is its
// place among the waiting); it is shown with its request once room frees.
type hubAsk struct {
	host, key string
	id        serve.AskID
	size      int64         // bytes of its message
	elem      *list.Element // in memoryState.waiting
	ask       *serve.Ask    // once shown
	asked     string        // requestDigest of the request shown
	run       string        // the relay process that last sent it (hub.RunOf)
}

// NewApprover makes an approver named name (its credentials' name, which
// relays record in their audit records) over an authenticated connection.
// It shows at most bounds' ParkedAsks and ParkedBytes of asks at once and
// keeps the names of at most DeferredAsks more (zero fields: the defaults).
func NewApprover(nc *nats.Conn, name string, log *slog.Logger, bounds inbox.Budget) (*Approver, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	events := serve.NewBroker()
	front, _ := events.Subscribe() // read to the end by the front end
	a := &Approver{
		name: name, js: js, log: cmp.Or(log, slog.New(slog.DiscardHandler)), events: events, front: front,
		now: time.Now, budget: bounds.WithDefaults(), room: make(chan struct{}, 1), replay: make(chan struct{}, 1),
		byKey: map[string]*hubAsk{}, hostOf: map[string]string{}, byID: map[serve.AskID]*hubAsk{},
		closed: map[string]uint64{}, grants: map[string]map[string][]wire.Grant{}, sending: map[serve.AskID]bool{},
		heldBack: map[serve.AskID]*hubAsk{},
	}
	a.memory.held.Limit = budget.Limit{Count: a.budget.ParkedAsks, Bytes: a.budget.ParkedBytes}
	return a, nil
}

// Events are AskQueued for each open ask of any relay, then Decided or
// Withdrawn when its relay reports it answered or gone, GrantsChanged, and
// Degraded memory while asks wait at the hub unshown. The channel closes
// after Run returns.
func (a *Approver) Events() <-chan serve.Event { return a.front }

// Subscribe adds a subscriber beside the front end (a status line, a
// notifier, the approve page), as serve.Server.Subscribe does: its own
// buffer; subscribe before Run to miss nothing.
func (a *Approver) Subscribe() (events <-chan serve.Event, cancel func()) {
	return a.events.Subscribe()
}

// Run follows the hub until ctx ends, waiting for it while it is away.
func (a *Approver) Run(ctx context.Context) {
	a.mu.Lock()
	a.run = ctx
	a.mu.Unlock()
	defer a.events.Close()
	defer a.senders.Wait()
	var wg sync.WaitGroup
	wg.Go(func() { watchGrants(ctx, a.js, a.log, "", true, a.grantsChanged) })
	wg.Go(func() { a.refill(ctx) })
	defer wg.Wait()
	for ctx.Err() == nil {
		cc, err := a.follow(ctx)
		if err != nil {
			a.log.Warn("hub not ready; retrying", "err", err)
			await(ctx, time.After(retryMax))
			continue
		}
		a.awaitReplay(ctx)
		cc.Stop()
	}
}

// awaitReplay returns when ctx ends or the stream is to be read again.
func (a *Approver) awaitReplay(ctx context.Context) {
	for await(ctx, a.replay) {
		a.mu.Lock()
		due := a.memory.replayFrom != 0 // else follow took it already
		a.mu.Unlock()
		if due {
			return
		}
	}
}

// follow attaches to the buckets and consumes the asks stream: from its
// start, or from the first ask not kept when the waiting list was full.
func (a *Approver) follow(ctx context.Context) (jetstream.ConsumeContext, error) {
	dec, err := a.js.KeyValue(ctx, hub.DecisionsBucket)
	if err != nil {
		return nil, err
	}
	gr, err := a.js.KeyValue(ctx, hub.GrantsBucket)
	if err != nil {
		return nil, err
	}
	st, err := a.js.Stream(ctx, hub.AsksStream)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	from := a.memory.replayFrom
	a.mu.Unlock()
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 0 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from}
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.decisions, a.grantsKV, a.stream = dec, gr, st
	a.replayTo = 0
	if last := st.CachedInfo().State.LastSeq; last >= max(from, 1) {
		a.replayTo = last
	}
	// A stopped consumer's callback may still run: its messages are
	// dropped, so asks are taken in stream order.
	a.gen++
	gen := a.gen
	a.memory.replayFrom = 0
	a.mu.Unlock()
	cc, err := cons.Consume(func(msg jetstream.Msg) { a.onAsk(gen, msg) }, pullExpiry, jetstream.PullMaxMessages(askPullBatch))
	if err != nil {
		a.mu.Lock()
		a.memory.replayFrom = from // nothing was read: the next try starts there
		a.mu.Unlock()
		return nil, err
	}
	return cc, nil
}

// onAsk reads permtui.ask.<host>.<key> and permtui.gone.<host>.<key>.
func (a *Approver) onAsk(gen int, msg jetstream.Msg) {
	tok := strings.Split(msg.Subject(), ".")
	if len(tok) != 4 {
		return
	}
	kind, host, hk := tok[1], tok[2], tok[2]+"."+tok[3]
	meta, merr := msg.Metadata()
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen != a.gen {
		return
	}
	var seq uint64
	if merr == nil {
		seq = meta.Sequence.Stream
		defer a.replayed(meta)
	}
	run := hub.RunOf(msg.Headers().Get(jetstream.MsgIDHeader))
	if kind == "gone" && tok[3] == hub.SweepKey {
		defer a.afterMemoryChange()
		a.sweep(host, run, seq)
		return
	}
	// A closed ask stays closed, unless its relay publishes it again later
	// (moved back to this host, decision 0245).
	if closedAt, closed := a.closed[hk]; closed && (kind != "ask" || seq <= closedAt) {
		return
	}
	defer a.afterMemoryChange()
	switch kind {
	case "ask":
		if h := a.byKey[hk]; h != nil {
			h.run = run // sent again after a reconnect, or by a relay started again
			return
		}
		m, req, err := decodeHostAsk(host, msg.Data())
		if err = cmp.Or(err, merr); err != nil {
			a.log.Warn("ask not shown", "subject", msg.Subject(), "err", err)
			return
		}
		size := int64(len(msg.Data()))
		if !a.keep(meta.Sequence.Stream) {
			return
		}
		if prev, ok := a.hostOf[tok[3]]; ok && prev != host {
			// Its relay was restarted under another host: the old copy
			// can no longer be delivered.
			a.letGo(prev, tok[3], goneMsg{movedTo: host}, seq)
		}
		delete(a.closed, hk)
		a.next++
		h := &hubAsk{host: host, key: tok[3], id: a.next, size: size, run: run}
		a.byKey[hk] = h
		a.hostOf[tok[3]] = host
		if a.memory.waiting.Len() == 0 && a.fits(size) {
			a.memory.held.Add(1, h.size)
			a.show(h, m, req, size)
			return
		}
		h.elem = a.memory.waiting.PushBack(h)
	case "gone":
		var g goneMsg
		if json.Unmarshal(msg.Data(), &g) != nil {
			g = goneMsg{}
		}
		a.letGo(host, tok[3], g, seq)
	}
}

// sweep lets go of host's asks last sent by another relay process than
// run, which sent every ask its host still has before this message at
// stream sequence seq (decision 0275). a.mu is held.
func (a *Approver) sweep(host, run string, seq uint64) {
	var gone []string
	for _, h := range a.byKey {
		if h.host == host && h.run != run {
			gone = append(gone, h.key)
		}
	}
	for _, key := range gone {
		a.letGo(host, key, goneMsg{swept: true}, seq)
	}
}

// letGo closes the ask of host and key at stream sequence seq: answered if
// g carries a response, else withdrawn. a.mu is held.
func (a *Approver) letGo(host, key string, g goneMsg, seq uint64) {
	hk := host + "." + key
	a.close(hk, seq)
	h := a.byKey[hk]
	if h == nil {
		if g.Ask != nil && g.Response != nil {
			a.showDenied(host, g)
		}
		return
	}
	a.forget(h)
	if h.elem != nil {
		a.memory.waiting.Remove(h.elem) // never shown
		return
	}
	a.memory.held.Release(h.size)
	if h.ask == nil {
		return // being read again; refill drops it
	}
	if a.heldBack[h.id] != nil {
		delete(a.heldBack, h.id) // gone before it was shown
		return
	}
	delete(a.byID, h.id)
	if g.Response == nil {
		a.events.Publish(serve.Withdrawn{Withdrawn: inbox.Withdrawn{ID: h.id, Session: h.ask.Session, Path: h.ask.Path, Replaced: g.Replaced},
			Pending: true, Why: g.why(), Rejudged: g.Rejudged})
		return
	}
	a.events.Publish(serve.Decided{Ask: *h.ask, Response: *g.Response, Auto: g.Auto, Approver: g.Approver, Queued: true,
		Latency: a.now().Sub(h.ask.At)})
}

// showDenied reports the answer of an ask its relay never sent, too large
// for the hub, from the cut ask its gone message carries. a.mu is held.
func (a *Approver) showDenied(host string, g goneMsg) {
	m := *g.Ask
	req, err := wire.ParseRequest(m.Request)
	if err != nil || m.Host != host {
		a.log.Warn("denied ask not shown", "host", host, "err", err)
		return
	}
	a.next++
	ask := serve.Ask{Arrived: inbox.Arrived{ID: a.next, Session: m.Session, Path: m.Path, Request: req, At: time.UnixMilli(m.At)},
		Verdict: m.Verdict, Host: host}
	a.events.Publish(serve.Decided{Ask: ask, Response: *g.Response, Auto: g.Auto, Approver: g.Approver})
}

// forget lets go of h's names. a.mu is held.
func (a *Approver) forget(h *hubAsk) {
	delete(a.byKey, h.host+"."+h.key)
	if a.hostOf[h.key] == h.host {
		delete(a.hostOf, h.key)
	}
}

// decodeHostAsk reads an ask published on host's subject.
func decodeHostAsk(host string, data []byte) (askMsg, *wire.Request, error) {
	m, req, err := decodeAsk(data)
	if err == nil && m.Host != host {
		err = fmt.Errorf("%w: host %s on %s's subject", errBadMessage, wire.QuoteShort(m.Host), host)
	}
	return m, req, err
}

// show makes h's ask from its message and queues it for the front end.
// a.mu is held.
func (a *Approver) show(h *hubAsk, m askMsg, req *wire.Request, size int64) {
	a.memory.held.Add(0, size-h.size) // the message read again may differ
	h.size = size
	h.asked = requestDigest(m.Request)
	// The relay's scopes name the deny rules its grants pass; an older
	// relay's ask comes without them, judged here without a policy.
	scopes := serve.OfferedScopes(req, nil)
	if m.Scopes != nil {
		scopes = *m.Scopes
	}
	h.ask = &serve.Ask{
		Arrived: inbox.Arrived{ID: h.id, Session: m.Session, Path: m.Path, Request: req, At: time.UnixMilli(m.At)},
		Verdict: m.Verdict,
		Scopes:  scopes,
		Host:    h.host,
	}
	if a.replayTo != 0 {
		a.heldBack[h.id] = h
		return
	}
	a.byID[h.id] = h
	a.events.Publish(serve.AskQueued{Ask: *h.ask})
}

// replayed notes that the stream was read to meta: once it is read to
// where it ended when the consumer was made, the asks held back that are
// still open are shown, in the order they were first seen. a.mu is held.
func (a *Approver) replayed(meta *jetstream.MsgMetadata) {
	if a.replayTo == 0 || (meta.Sequence.Stream < a.replayTo && meta.NumPending > 0) {
		return
	}
	a.replayTo = 0
	for _, id := range slices.Sorted(maps.Keys(a.heldBack)) {
		h := a.heldBack[id]
		delete(a.heldBack, id)
		a.byID[id] = h
		a.events.Publish(serve.AskQueued{Ask: *h.ask})
	}
}

// close remembers that the ask hk is answered, withdrawn or moved, by the
// message at stream sequence seq. a.mu is held.
func (a *Approver) close(hk string, seq uint64) {
	if len(a.closed) >= 1<<16 {
		// Old asks are seldom delivered again (the stream is read again only
		// from an ask not kept); one that is, is shown until its gone follows.
		clear(a.closed)
	}
	a.closed[hk] = seq
}

// grantsChanged takes a host's grants of a session; consoles are shown each
// session's grants of every host as one list, in host order.
func (a *Approver) grantsChanged(host, session string, grants []wire.Grant, _ uint64) {
	a.mu.Lock()
	if len(grants) == 0 {
		delete(a.grants[session], host)
		if len(a.grants[session]) == 0 {
			delete(a.grants, session)
		}
	} else {
		if a.grants[session] == nil {
			a.grants[session] = map[string][]wire.Grant{}
		}
		a.grants[session][host] = grants
	}
	all := make(map[string][]wire.Grant, len(a.grants))
	for s, byHost := range a.grants {
		for _, h := range slices.Sorted(maps.Keys(byHost)) {
			all[s] = merge(all[s], byHost[h])
		}
	}
	a.mu.Unlock()
	a.events.Publish(serve.GrantsChanged{Grants: all})
}

// Decide records d in the decisions bucket unless another approver decided
// the ask first; then the error names who did. The relay's server judges
// the decision as made (scope, edited grants), records it and its grants,
// and answers; one it refuses denies the ask with the refusal as reason.
func (a *Approver) Decide(d serve.Decision) error {
	a.mu.Lock()
	h, dec, sending := a.byID[d.Ask], a.decisions, a.sending[d.Ask]
	a.mu.Unlock()
	switch {
	case dec == nil:
		return ErrNotReady
	case h == nil:
		return serve.ErrUnknownAsk
	case sending:
		return serve.ErrDelivering
	case d.DenyFor != nil:
		return fmt.Errorf("%w: %w", serve.ErrInvalidDecision, errDenyAtHub)
	}
	m := decisionMsg{State: d.State, Reason: d.Reason, Scope: d.Scope, Grants: d.Grants, EditDenies: d.EditDenies,
		Unattended: d.Unattended, Approver: a.name, Via: d.Approver, DecidedAt: a.now().UnixMilli(), Asked: h.asked}
	// The relay refuses what check refuses, after the ask's one decision is
	// taken: refuse it here, while the ask can still be decided.
	if err := m.check(); err != nil {
		return fmt.Errorf("%w: %v", serve.ErrInvalidDecision, err)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(data) > hub.MaxDecisionBytes {
		return fmt.Errorf("%w: the decision is %d bytes, the hub carries at most %d (shorten the edited pattern)",
			serve.ErrInvalidDecision, len(data), hub.MaxDecisionBytes)
	}
	key := hub.DecisionKey(h.host, h.key)
	ctx, cancel := context.WithTimeout(context.Background(), hubTimeout)
	defer cancel()
	err = a.record(ctx, dec, key, data)
	if !errors.Is(err, errUnconfirmed) {
		return err
	}
	a.mu.Lock()
	a.sending[d.Ask] = true
	a.mu.Unlock()
	a.senders.Go(func() { a.keepSending(d.Ask, key, data) })
	return fmt.Errorf("%w (%v)", serve.ErrDelivering, err)
}

// errUnconfirmed: the hub did not answer a decision's create, so it may or
// may not have taken it.
var errUnconfirmed = errors.New("decision unconfirmed")

// record marks the decision under this approver's name, then creates it at
// key: the relay names the approver of a decision only with its mark
// (decision 0212), and a mark already there is an earlier try's, since it
// names these bytes. A create refused because the key holds a value is ours
// if the value is exactly ours (an earlier try that the hub took without its
// answer reaching us), else the winner's.
func (a *Approver) record(ctx context.Context, dec jetstream.KeyValue, key string, data []byte) error {
	// A publish, not the bucket's create, which reads the key back when it
	// is taken: approvers may not read marks.
	_, err := a.js.Publish(ctx, hub.DecisionSubjectPrefix+hub.MarkKey(key, a.name, data), nil,
		jetstream.WithExpectLastSequencePerSubject(0))
	var api *jetstream.APIError
	if err == nil || errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		_, err = dec.Create(ctx, key, data)
	}
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("%w: %w", errUnconfirmed, err)
	}
	winner := "another approver"
	if e, gerr := dec.Get(ctx, key); gerr == nil {
		if bytes.Equal(e.Value(), data) {
			return nil
		}
		var w decisionMsg
		if json.Unmarshal(e.Value(), &w) == nil && w.Approver != "" {
			winner = wire.QuoteShort(w.Approver)
		}
	}
	a.log.Debug("decision race lost", "key", key, "winner", winner)
	return fmt.Errorf("%w by %s", serve.ErrAlreadyDecided, winner)
}

// keepSending sends an unconfirmed decision again, with backoff, until the
// hub takes it or refuses it for another's, the ask ends, or Run does.
func (a *Approver) keepSending(id serve.AskID, key string, data []byte) {
	defer func() {
		a.mu.Lock()
		delete(a.sending, id)
		a.mu.Unlock()
	}()
	a.mu.Lock()
	run := a.run
	a.mu.Unlock()
	wait := retryFirst
	for await(run, time.After(wait)) {
		a.mu.Lock()
		open, dec := a.byID[id] != nil, a.decisions
		a.mu.Unlock()
		if !open {
			return // answered or withdrawn meanwhile
		}
		ctx, cancel := context.WithTimeout(run, hubTimeout)
		err := a.record(ctx, dec, key, data)
		cancel()
		if !errors.Is(err, errUnconfirmed) {
			a.log.Info("unconfirmed decision resolved", "key", key, "err", err)
			return
		}
		wait = min(wait*2, retryMax)
	}
}

// errDenyAtHub: session denies (decision 0104) are kept by a local server
// only; the hub's buckets carry grants, not denies.
var errDenyAtHub = errors.New("a deny for the session is not kept over a hub")

// RevokeDeny: the hub keeps no session denies.
func (a *Approver) RevokeDeny(string, serve.SessionDeny) error { return errDenyAtHub }

// RevokeGrant removes a whole-session grant from the grants bucket, under
// every host that holds it; those relays judge later asks without it.
func (a *Approver) RevokeGrant(session string, g wire.Grant) error {
	a.mu.Lock()
	gr := a.grantsKV
	var hosts []string
	for h, l := range a.grants[session] {
		if slices.Contains(l, g) {
			hosts = append(hosts, h)
		}
	}
	a.mu.Unlock()
	if gr == nil {
		return ErrNotReady
	}
	if len(hosts) == 0 {
		// Not "revoked": a relay may still apply it (a list not seen yet).
		return fmt.Errorf("no host's grants hold %s %s for this session as last seen here; nothing revoked", g.Surface, g.Pattern)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hubTimeout)
	defer cancel()
	var errs []error
	for _, h := range hosts {
		_, err := updateGrants(ctx, gr, h, session, func(l []wire.Grant) []wire.Grant {
			return slices.DeleteFunc(slices.Clone(l), func(x wire.Grant) bool { return x == g })
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// updateGrants changes host's grants of a session with compare-and-set, so
// two writers at once both count; it returns the revision written.
func updateGrants(ctx context.Context, kv jetstream.KeyValue, host, session string, change func([]wire.Grant) []wire.Grant) (uint64, error) {
	key := hub.GrantsKey(host, session)
	for {
		var cur grantsMsg
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &cur); err != nil {
				return 0, fmt.Errorf("grants bucket: %w", err)
			}
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return 0, err
		}
		data, err := json.Marshal(grantsMsg{Session: session, Grants: change(cur.Grants)})
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev, err = kv.Create(ctx, key, data)
		} else {
			rev, err = kv.Update(ctx, key, data, rev)
		}
		if !errors.Is(err, jetstream.ErrKeyExists) || ctx.Err() != nil {
			return rev, err // written, or refused for good (too large, not allowed)
		}
		// Another writer changed them in between: read again.
	}
}
