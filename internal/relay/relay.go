package relay

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// UnreadablePrefix begins the denial reason of an ask whose place in the
// decisions bucket holds something the relay cannot read as a decision.
const UnreadablePrefix = "the hub's decision could not be read, so the relay denied the ask: "

// refused is the denial reason of an ask whose hub decision the relay's
// server refused (an edited pattern that no longer covers it, a scope it
// does not offer) once it was asked again maxAskedAgain times.
func refused(approver string, err error) string {
	return fmt.Sprintf("the decision %s made at the hub was refused, so the relay denied the ask: %v", approver, err)
}

// refusedWhy is what consoles are told of a copy of an ask let go of
// because its relay's server refused the decision made on it: the ask
// follows under another name (decision 0273).
func refusedWhy(approver string, err error) string {
	return cutText(fmt.Sprintf("the decision %s made was refused by its relay: %v; the ask follows again", approver, err))
}

// maxAskedAgain bounds how often one ask is asked again after a refused
// decision: each refusal keeps its decision until the ask ends, and the
// next refusal denies it (fail closed).
const maxAskedAgain = 3

// payloadHeadroom is left of the server's max_payload for the message's
// headers (its deduplication id).
const payloadHeadroom = 1 << 10

// Timings of the hub side. A decision for an ask this relay does not know
// yet (it restarted and the inbox has not delivered the request again) is
// offered again after unknownDelay, at most maxUnknownDeliveries times, or
// every onDiskDelay for as long as asks for a person wait on disk
// (unknownDecision).
const (
	publishTimeout       = 5 * time.Second
	publishBatch         = 64
	retryFirst           = 250 * time.Millisecond
	retryMax             = 2 * time.Second
	unknownDelay         = time.Second
	maxUnknownDeliveries = 30
	onDiskDelay          = 10 * time.Second
	// pullExpiry renews every pull request this often: a pull request held
	// by a node that stopped (a consumer's leader) is replaced within about
	// this long, rather than after the client's default 30 s.
	pullExpiry = jetstream.PullExpiry(5 * time.Second)
	// decisionAckWait: a decision sent out but not acked (lost with a node
	// or a relay) is sent again after this long. A second delivery is
	// refused by serve, so a short wait costs nothing but a look.
	decisionAckWait = 10 * time.Second
)

// Relay is a subscriber of this host's serve.Server: the server answers what
// the local policy decides (no network on that path); each ask it leaves to
// a person goes to the hub, and the decision that comes back is delivered
// through Server.Decide, so it is audited before the response is written.
// Create the server with Grants as its GrantStore and LeaveOnExit set; its
// front end (the headless printer) reads the server itself, so a stalled
// stdout never holds up the asks going to the hub (decision 0220).
type Relay struct {
	srv    *serve.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	host   string
	run    string // this process's part of its message ids (hub.MsgID)
	grants *Grants
	log    *slog.Logger
	events <-chan serve.Event // its subscription to srv

	mu       sync.Mutex
	open     map[string]*openAsk // by hub key: asks waiting at the hub
	before   map[string]*openAsk // by the keys an open ask had before (openAsk.earlier, moved)
	keys     map[serve.AskID]string
	finished map[string]bool        // keys answered or withdrawn in this process
	tooLarge map[serve.AskID]askMsg // cut asks denied as too large, until their gone message
	unknown  map[uint64]uint64      // by stream sequence: offers here of a decision for an ask not known (unknownDecision)
	queue    []outMsg               // messages to publish, in order
	made     uint64                 // messages made (message)
	wake     chan struct{}

	onDisk     bool          // asks for a person wait on disk, beyond serve's memory budget
	scanned    bool          // the server judged every request its first look found (sweep)
	swept      bool          // the hub was told so (sweep)
	consumer   chan struct{} // closed once this host's decision consumer exists
	floor      decisionFloor
	delivering sync.WaitGroup // decisions handed to the server, not yet acked
}

type openAsk struct {
	id  serve.AskID
	msg outMsg // sent again after a reconnect
	ask serve.Ask
	// offered: the scopes the hub was sent; a decision for one it did not
	// offer is refused.
	offered serve.Scopes
	asked   string // requestDigest of the request sent
	// held: its hub decision, handed to the server and acked only once
	// the server answered (recorded) or let go of the ask: one stopped
	// before is handed back, for the next relay (finding F5). By stream
	// sequence: the hub offers it again after the ack wait.
	held map[uint64]jetstream.Msg
	// earlier: its hub keys whose decision the server refused, in order;
	// it is asked again under its first key and the count (askAgain).
	// Their decisions are held: a relay started again meets them again
	// in the same order and so asks under the same names.
	earlier []string
	// moved: its hub keys before a reload judged its reach again, the
	// refused ones among them; their decisions are held too, and offered
	// again once a later reload brings it back to one (decision 0290).
	moved []string
}

type outMsg struct {
	subject, msgID, key string
	data                []byte
	ask                 bool
}

// New makes a relay for host over an authenticated connection (hub.Connect
// with relay credentials). Call it before the server's Run, so the relay
// misses none of its events.
func New(srv *serve.Server, nc *nats.Conn, host string, grants *Grants, log *slog.Logger) (*Relay, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	r := &Relay{
		srv: srv, nc: nc, js: js, host: host, run: rand.Text(), grants: grants, log: cmp.Or(log, slog.New(slog.DiscardHandler)),
		open:     map[string]*openAsk{},
		before:   map[string]*openAsk{},
		keys:     map[serve.AskID]string{},
		finished: map[string]bool{},
		tooLarge: map[serve.AskID]askMsg{},
		unknown:  map[uint64]uint64{},
		wake:     make(chan struct{}, 1),
		consumer: make(chan struct{}),
	}
	r.events, _ = srv.Subscribe() // read to the end by Run
	// After a reconnect every open ask is sent again: the hub may have lost
	// it (retention) and deduplicates the ones it has.
	nc.SetReconnectHandler(func(*nats.Conn) { r.republish() })
	return r, nil
}

// Run relays until the server's event stream ends (after its Run returns);
// ctx stops the hub side.
func (r *Relay) Run(ctx context.Context) {
	var wg sync.WaitGroup
	hubCtx, stop := context.WithCancel(ctx)
	wg.Go(func() { r.publish(hubCtx) })
	wg.Go(func() { r.consumeDecisions(hubCtx) })
	wg.Go(func() { r.watchGrants(hubCtx) })
	wg.Go(func() { r.writeGrants(hubCtx) })
	defer wg.Wait()
	defer stop()
	for ev := range r.events {
		r.handle(ev)
	}
}

func (r *Relay) handle(ev serve.Event) {
	switch ev := ev.(type) {
	case serve.AskQueued:
		r.queued(ev.Ask, nil)
	case serve.Decided:
		r.gone(ev.Ask.ID, goneMsg{Response: &ev.Response, Auto: ev.Auto, Approver: ev.Approver})
	case serve.Withdrawn:
		r.gone(ev.ID, goneMsg{Replaced: ev.Replaced})
	case serve.ScopesChanged:
		r.rescoped(ev)
	case serve.Scanned:
		r.mu.Lock()
		r.scanned = ev.Whole
		r.mu.Unlock()
		r.sweep()
	case serve.Degraded:
		if ev.Area == serve.AreaMemory {
			r.mu.Lock()
			r.onDisk = ev.Problem != ""
			r.mu.Unlock()
		}
	}
}

// sweep tells the hub, once, that this relay process sent every ask its
// host still has: the server's first look delivered every request on disk,
// and the asks for a person among them are queued to be sent before this
// message. Approvers then let go of the host's asks that an earlier relay
// process sent and this one did not: their requests went while no relay
// served them (decision 0275). Its message id names this process (its
// run), as every message's does: its body is empty. With asks left on
// disk it is not sent; they end as before.
func (r *Relay) sweep() {
	r.mu.Lock()
	if !r.scanned || r.swept || r.onDisk {
		r.mu.Unlock()
		return
	}
	r.swept = true
	r.queue = append(r.queue, r.message(false, hub.SweepKey, []byte("{}")))
	r.mu.Unlock()
	notify(r.wake)
}

// askKey names a delivery of an ask on the hub (subjects, message ids, its
// place in the decisions bucket): the request's wire.RequestKey, its one
// name (decision 0186), then a digest of the file delivered and of the
// reach its scopes name. The same file is the same ask after a relay
// restart; a file replaced under its name is another ask, even with the
// same request, with its own decision: one made for the first never
// answers it (decision 0237). So is an ask whose scopes a policy change
// made reach elsewhere: a decision made on the reach named before never
// answers it (decision 0246).
func askKey(a serve.Ask) string {
	h := sha256.New()
	h.Write([]byte(a.File.String()))
	reach := a.Scopes
	reach.Rev = 0
	named, _ := json.Marshal(reach) // plain data: it always encodes
	h.Write(named)
	return wire.KeyOf(a.Session, a.Request).String() + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// noScopesSent is the note of an ask sent without its scopes, too large
// with them: the hub can approve it once or deny it.
const noScopesSent = "no approval for longer than once is offered: the ask with what its grants reach is larger than the hub carries"

// queued sends a to the hub; oa is its open ask when a reload judged its
// reach again (rescoped), nil for a new one.
func (r *Relay) queued(a serve.Ask, oa *openAsk) {
	req := a.Request
	key := askKey(a)
	offered := a.Scopes
	m := askMsg{Host: r.host, Session: a.Session, Path: a.Path, At: a.At.UnixMilli(), Verdict: shownVerdict(a.Verdict), Scopes: &offered}
	raw, err := wire.MarshalRequest(req)
	var data []byte
	if err == nil {
		m.Request = raw
		data, err = json.Marshal(m)
		limit := hub.MaxAskBytes
		if mp := r.payloadLimit(); mp > 0 {
			limit = min(limit, mp)
		}
		if err == nil && len(data) > limit {
			// Each scope repeats the suggestion: sent offering none, the
			// ask is still decided once by a person, and nothing wider.
			offered = serve.Scopes{Note: noScopesSent}
			data, err = json.Marshal(m)
		}
	}
	if err != nil || len(data) > hub.MaxAskBytes {
		r.mu.Lock()
		r.keys[a.ID] = key // for its gone message
		held := r.release(oa)
		r.mu.Unlock()
		r.ack(held)
		r.denyTooLarge(a.ID, m, req, len(data), hub.MaxAskBytes, "the largest ask", err)
		return
	}
	r.mu.Lock()
	out := r.message(true, key, data)
	if oa == nil {
		oa = &openAsk{}
	}
	oa.id, oa.msg, oa.ask, oa.offered, oa.asked = a.ID, out, a, offered, requestDigest(raw)
	again := r.reopen(oa, key)
	r.open[key] = oa
	r.keys[a.ID] = key
	r.queue = append(r.queue, out)
	r.mu.Unlock()
	nakAll(again)
	notify(r.wake)
}

// reopen takes key out of the names oa had before, as it is sent under it
// again, and returns the decisions held for it, to be offered again: they
// were made on the reach it names again (decision 0290). r.mu is held.
func (r *Relay) reopen(oa *openAsk, key string) []jetstream.Msg {
	if r.before[key] != oa {
		return nil
	}
	delete(r.before, key)
	oa.moved = slices.DeleteFunc(oa.moved, func(k string) bool { return k == key })
	var again []jetstream.Msg
	for seq, msg := range oa.held {
		if r.decisionKey(msg) == key {
			again = append(again, msg)
			delete(oa.held, seq)
		}
	}
	return again
}

// release forgets the names oa (nil: none) had before and returns the
// decisions it held, to be acked: it is answered or let go of. r.mu is
// held.
func (r *Relay) release(oa *openAsk) map[uint64]jetstream.Msg {
	if oa == nil {
		return nil
	}
	for _, k := range slices.Concat(oa.earlier, oa.moved) {
		delete(r.before, k)
	}
	held := oa.held
	oa.held = nil
	return held
}

// ack acks decisions held until their ask ended.
func (r *Relay) ack(held map[uint64]jetstream.Msg) {
	for seq, msg := range held {
		r.finishDecision(seq, msg.Ack)
	}
}

// nakAll hands decisions back to the hub, which offers them again at once.
func nakAll(msgs []jetstream.Msg) {
	for _, msg := range msgs {
		_ = msg.Nak()
	}
}

// payloadLimit is the largest message the hub's server takes, from its
// INFO at the last connect, less payloadHeadroom; not above 0 when unknown.
func (r *Relay) payloadLimit() int { return int(r.nc.MaxPayload()) - payloadHeadroom }

// denyTooLarge denies an ask whose message is larger than the hub
// carries: no approver could see it, so nobody may approve it (fail
// closed).
func (r *Relay) denyTooLarge(id serve.AskID, m askMsg, req *wire.Request, size, limit int, by string, err error) {
	r.log.Warn("ask not sent to the hub; denied", "ask", id, "size", size, "limit", limit, "err", err)
	if cut, cerr := cutAsk(m, req); cerr == nil {
		r.mu.Lock()
		r.tooLarge[id] = cut
		r.mu.Unlock()
	}
	reason := fmt.Sprintf("the ask is too large to send to the hub (%d bytes; %s is %d)", size, by, limit)
	if err := r.srv.Decide(serve.Decision{Ask: id, State: wire.StateDeniedWithReason, Reason: reason, Unattended: true}); err != nil {
		r.log.Warn("denial failed", "ask", id, "err", err)
	}
}

// denySent denies an ask whose message the hub's max_payload refuses.
func (r *Relay) denySent(id serve.AskID, data []byte, limit int, by string, err error) {
	m, req, derr := decodeAsk(data)
	if derr != nil {
		req = &wire.Request{}
	}
	r.denyTooLarge(id, m, req, len(data), limit, by, err)
}

// gone tells the hub an ask it carries is no longer open; the answer of one
// denied as too large carries its cut ask, for consoles to show.
func (r *Relay) gone(id serve.AskID, m goneMsg) {
	r.mu.Lock()
	if cut, ok := r.tooLarge[id]; ok && m.Response != nil {
		m.Ask = &cut
	}
	delete(r.tooLarge, id)
	key, ok := r.keys[id]
	var held map[uint64]jetstream.Msg
	if ok {
		held = r.release(r.open[key])
		delete(r.keys, id)
		delete(r.open, key)
	}
	r.mu.Unlock()
	r.ack(held)
	if ok {
		r.sendGone(key, m)
	}
}

// sendGone marks key finished and queues its gone message.
func (r *Relay) sendGone(key string, m goneMsg) {
	data, err := json.Marshal(m)
	if err != nil {
		r.log.Error("gone message", "key", key, "err", err)
		return
	}
	r.mu.Lock()
	if len(r.finished) >= 1<<16 {
		clear(r.finished) // a decision for a key forgotten here is acked after its retries
	}
	r.finished[key] = true
	r.queue = append(r.queue, r.message(false, key, data))
	r.mu.Unlock()
	notify(r.wake)
}

// message makes an ask (else a gone message) about key, with the next of
// this process's message ids: its retries and its sending again after a
// reconnect are stored once, while the key sent anew, as an ask a reload
// brought back to a name it had, is another message (decision 0290).
// r.mu is held.
func (r *Relay) message(ask bool, key string, data []byte) outMsg {
	r.made++
	kind, subject := "gone", hub.GoneSubject(r.host, key)
	if ask {
		kind, subject = "ask", hub.AskSubject(r.host, key)
	}
	return outMsg{subject: subject, msgID: hub.MsgID(kind, r.host, key, r.made, r.run), key: key, data: data, ask: ask}
}

// rescoped sends again, as another ask, one whose scopes a policy reload
// changed: the hub's copy named a reach that is no longer the one the
// relay's server would record, so it is withdrawn and a decision made on
// it is never delivered; consoles are shown the new reach (decision 0246).
func (r *Relay) rescoped(ev serve.ScopesChanged) {
	r.mu.Lock()
	key := r.keys[ev.Ask]
	oa := r.open[key]
	if oa == nil {
		r.mu.Unlock()
		return
	}
	// The decisions made on its names stay with the ask: a later reload
	// may bring it back to one (decision 0290). Asked again from the new
	// name, it counts its refusals anew.
	delete(r.open, key)
	oa.moved = slices.Concat(oa.moved, oa.earlier, []string{key})
	oa.earlier = nil
	for _, k := range oa.moved {
		r.before[k] = oa
	}
	r.mu.Unlock()
	r.sendGone(key, goneMsg{Rejudged: true})
	a := oa.ask
	a.Scopes = ev.Scopes
	r.queued(a, oa)
}

func (r *Relay) republish() {
	r.mu.Lock()
	for _, oa := range r.open {
		r.queue = append(r.queue, oa.msg)
	}
	r.mu.Unlock()
	notify(r.wake)
}

// notify wakes c's reader unless a wake-up is pending already.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// await waits for c and reports false if ctx ended first.
func await[T any](ctx context.Context, c <-chan T) bool {
	select {
	case <-ctx.Done():
		return false
	case <-c:
		return true
	}
}

// publish sends queued messages, up to publishBatch at a time without
// waiting for each acknowledgement. While the hub is unreachable the batch is
// retried with backoff; the asks wait (their children keep polling) and
// nothing is answered without a decision. A withdrawal may reach the hub
// before a retried ask: approvers then never show it.
func (r *Relay) publish(ctx context.Context) {
	// Asks go out only once the durable consumer exists: it starts at the
	// decisions made after its creation, so a decision for an ask sent
	// earlier could be behind it and never delivered.
	if !await(ctx, r.consumer) {
		return
	}
	wait := retryFirst
	for {
		r.mu.Lock()
		n := min(len(r.queue), publishBatch)
		batch := slices.Clone(r.queue[:n])
		r.queue = r.queue[n:]
		r.mu.Unlock()
		if n == 0 {
			if !await(ctx, r.wake) {
				return
			}
			continue
		}
		failed := r.send(ctx, batch)
		if len(failed) == 0 {
			wait = retryFirst
			continue
		}
		r.mu.Lock()
		r.queue = append(failed, r.queue...)
		r.mu.Unlock()
		if !await(ctx, time.After(wait)) {
			return
		}
		wait = min(wait*2, retryMax)
	}
}

// send publishes a batch and returns the messages the hub did not
// acknowledge, in order.
func (r *Relay) send(ctx context.Context, batch []outMsg) []outMsg {
	type sent struct {
		m   outMsg
		ack jetstream.PubAckFuture
	}
	var inFlight []sent
	var failed []outMsg
	for _, m := range batch {
		id, open := r.openID(m.key)
		if m.ask && !open {
			continue // answered or withdrawn before it was sent
		}
		// The server's limit, from its INFO at the last connect: a
		// deployment with a smaller max_payload would refuse the ask for ever.
		if limit := r.payloadLimit(); m.ask && limit > 0 && len(m.data) > limit {
			r.denySent(id, m.data, limit, "the hub's max_payload less headers", nil)
			continue
		}
		ack, err := r.js.PublishAsync(m.subject, m.data, jetstream.WithMsgID(m.msgID))
		if m.ask && errors.Is(err, nats.ErrMaxPayload) {
			r.denySent(id, m.data, int(r.nc.MaxPayload()), "the hub's max_payload", err)
			continue
		}
		if err != nil {
			r.log.Warn("hub publish failed; retrying", "subject", m.subject, "err", err)
			failed = append(failed, m)
			continue
		}
		inFlight = append(inFlight, sent{m, ack})
	}
	// One deadline for the batch that stays passed: a time.After channel
	// fires once, and the next unanswered acknowledgement (one lost with a
	// stopping node is never answered) then blocked publishing for good.
	deadline, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	for _, s := range inFlight {
		select {
		case <-s.ack.Ok():
			continue
		case err := <-s.ack.Err():
			r.log.Warn("hub publish failed; retrying", "subject", s.m.subject, "err", err)
		case <-deadline.Done():
			if ctx.Err() == nil {
				r.log.Warn("hub publish unacknowledged; retrying", "subject", s.m.subject)
			}
		}
		failed = append(failed, s.m)
	}
	return failed
}

// openID is the AskID of the open ask key, if it is open.
func (r *Relay) openID(key string) (serve.AskID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if oa := r.open[key]; oa != nil {
		return oa.id, true
	}
	return 0, false
}

// consumeDecisions reads this host's decisions through its durable consumer:
// a relay that restarts resumes where it stopped, and a decision is acked
// only once it was delivered (or its ask is known to be gone). A consumer
// that disappears (deleted by an operator, lost by the hub) is made again
// from the first decision this relay has not acked, so none is skipped.
func (r *Relay) consumeDecisions(ctx context.Context) {
	name := hub.RelayConsumer(r.host)
	cfg := jetstream.ConsumerConfig{
		Durable:       name,
		FilterSubject: hub.DecisionSubjectPrefix + r.host + ".>",
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       decisionAckWait,
	}
	var ready sync.Once
	for {
		cons, err := r.decisionConsumer(ctx, cfg)
		if err != nil {
			r.log.Warn("decision consumer not ready; retrying", "err", err)
			if !await(ctx, time.After(retryMax)) {
				return
			}
			continue
		}
		r.floor.bound(cons.CachedInfo().AckFloor.Stream)
		ready.Do(func() { close(r.consumer) })
		lost := make(chan struct{}, 1)
		cc, err := cons.Consume(func(msg jetstream.Msg) { r.onDecision(ctx, msg) }, pullExpiry, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			r.log.Warn("decision consumer", "err", err)
			if mayBeGone(err) {
				notify(lost)
			}
		}))
		if err != nil {
			r.log.Error("decision consumer failed", "err", err)
			return
		}
		awaitGone(ctx, r.js, hub.DecisionsStream, name, lost)
		if ctx.Err() != nil {
			r.stopDecisions(cc)
			return
		}
		cc.Stop()
		from := r.floor.resume()
		r.log.Warn("decision consumer was gone; made again from the first decision not acked", "sequence", from)
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
}

// decisionConsumer makes this host's consumer, or binds to the one there:
// one made again from a sequence keeps that start, which a plain update
// would refuse to change.
func (r *Relay) decisionConsumer(ctx context.Context, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	cons, err := r.js.CreateOrUpdateConsumer(ctx, hub.DecisionsStream, cfg)
	if err == nil {
		return cons, nil
	}
	if have, ierr := r.js.Consumer(ctx, hub.DecisionsStream, cfg.Durable); ierr == nil {
		if c := have.CachedInfo().Config; c.FilterSubject == cfg.FilterSubject && c.AckPolicy == cfg.AckPolicy {
			return have, nil
		}
	}
	return nil, err
}

// decisionFloor follows which decisions this relay has acked, so that its
// consumer can be made again from the first one it has not.
type decisionFloor struct {
	mu   sync.Mutex
	base uint64          // every decision below was acked (the consumer's ack floor when bound)
	seen uint64          // the highest sequence delivered here
	open map[uint64]bool // delivered, not acked or terminated
}

func (f *decisionFloor) bound(ackFloor uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.base = max(f.base, ackFloor+1)
}

func (f *decisionFloor) received(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		f.open = map[uint64]bool{}
	}
	f.open[seq] = true
	f.seen = max(f.seen, seq)
}

func (f *decisionFloor) finished(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open, seq)
}

func (f *decisionFloor) resume() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	from := max(f.base, f.seen+1)
	for seq := range f.open {
		from = min(from, seq)
	}
	return from
}

// stopDecisions drains the consumer before the relay lets go of the
// connection: the hub forgets this relay's pull request, and each decision
// already sent here is acked or handed back. Stopping without draining left
// the pull request at the hub until it noticed the closed connection; a
// decision made in between went to the relay that was gone and reached the
// next one only after the ack wait.
func (r *Relay) stopDecisions(cc jetstream.ConsumeContext) {
	cc.Drain()
	if !r.nc.IsConnected() {
		return // the hub sends nothing now; what it sent comes again after the ack wait
	}
	select {
	case <-cc.Closed():
	case <-time.After(publishTimeout):
		return
	}
	r.delivering.Wait()
	var held []jetstream.Msg
	r.mu.Lock()
	for _, oa := range r.open {
		held = slices.AppendSeq(held, maps.Values(oa.held))
		oa.held = nil
	}
	r.mu.Unlock()
	for _, msg := range held {
		_ = msg.Nak() // not recorded here: the next relay delivers it
	}
	_ = r.nc.FlushTimeout(publishTimeout) // the acks, before the caller closes the connection
}

// hold keeps a decision handed to the server for the ask at key until the
// ask is answered or let go of; it reports false if that happened already.
func (r *Relay) hold(key string, seq uint64, msg jetstream.Msg) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	oa := r.open[key]
	if oa == nil {
		return false
	}
	oa.keep(seq, msg)
	return true
}

// keep holds the decision msg at seq until the ask is answered or let go
// of. r.mu is held.
func (oa *openAsk) keep(seq uint64, msg jetstream.Msg) {
	if oa.held == nil {
		oa.held = map[uint64]jetstream.Msg{}
	}
	oa.held[seq] = msg
}

// finishDecision acks or terminates the decision at stream sequence seq
// (0: unknown), which is then never offered again.
func (r *Relay) finishDecision(seq uint64, finish func() error) {
	_ = finish()
	if seq != 0 {
		r.floor.finished(seq)
		r.mu.Lock()
		delete(r.unknown, seq)
		r.mu.Unlock()
	}
}

// decisionKey is the ask key a decision message of this host is for.
func (r *Relay) decisionKey(msg jetstream.Msg) string {
	return strings.TrimPrefix(msg.Subject(), hub.DecisionSubjectPrefix+r.host+".")
}

func (r *Relay) onDecision(ctx context.Context, msg jetstream.Msg) {
	key := r.decisionKey(msg)
	meta, merr := msg.Metadata()
	var seq uint64
	if merr == nil {
		seq = meta.Sequence.Stream
		r.floor.received(seq)
	}
	done := func(finish func() error) { r.finishDecision(seq, finish) }
	if strings.Contains(key, ".") {
		done(msg.Ack) // an approver's mark, looked up with its decision
		return
	}
	d, readErr := readDecision(msg)
	if readErr != nil {
		r.log.Error("unreadable decision; the ask is denied", "key", key, "err", readErr)
		d = unreadable(readErr)
	}
	r.mu.Lock()
	oa, finished, onDisk := r.open[key], r.finished[key], r.onDisk
	was := r.before[key]
	if was != nil {
		was.keep(seq, msg) // for a name it had before: kept with its ask
	}
	var offered uint64
	if oa == nil && !finished && was == nil && seq != 0 {
		r.unknown[seq]++
		offered = r.unknown[seq]
	}
	r.mu.Unlock()
	switch {
	case was != nil:
		r.log.Debug("hub decision for a name its ask had before kept with it", "key", key)
	case oa != nil:
		// Delivered outside the consumer's callback, so that decisions
		// arriving together share the audit log's fsync.
		r.delivering.Go(func() { r.deliverFrom(ctx, msg, key, seq, oa, d, readErr == nil) })
	case finished:
		done(msg.Ack)
	default:
		r.unknownAsk(key, msg, offered, onDisk, done)
	}
}

// deliverFrom hands the hub decision d in msg, at stream sequence seq, to
// the server for the ask oa under key, once checked (when read) against
// its approver's mark and the request its approver was shown.
func (r *Relay) deliverFrom(ctx context.Context, msg jetstream.Msg, key string, seq uint64, oa *openAsk, d decisionMsg, read bool) {
	if read {
		switch ok, err := r.marked(ctx, key, msg.Data(), d.Approver); {
		case err != nil:
			r.log.Warn("approver's mark not looked up; the decision is offered again", "key", key, "err", err)
			_ = msg.NakWithDelay(unknownDelay)
			return
		case !ok:
			r.log.Error("decision without its approver's mark; the ask is denied", "key", key, "approver", d.Approver)
			d = unreadable(fmt.Errorf("approver %s did not mark it as theirs", wire.QuoteShort(d.Approver)))
		case d.Asked != oa.asked:
			// The key's one decision is taken: nobody can decide
			// the ask under it now (fail closed).
			r.log.Error("decision made for another request than the ask under its key; the ask is denied", "key", key, "approver", d.Approver)
			d = unreadable(errors.New("it was made for another request than the one now under its name"))
		}
	}
	err := r.deliver(oa, d)
	switch {
	case errors.Is(err, serve.ErrScopesChanged):
		// Made on scopes a reload judged again: the ask is sent again
		// with them once the relay handles the server's ScopesChanged,
		// which lets go of this copy; until then the decision is offered
		// again, and judged again (decision 0272).
		r.log.Warn("hub decision refused: made on scopes judged again since; offered again", "ask", oa.id, "approver", d.Approver)
		_ = msg.NakWithDelay(unknownDelay)
		return
	case errors.Is(err, serve.ErrInvalidDecision) && r.askAgain(key, seq, msg, oa, d.approverOf(), err):
		return
	case errors.Is(err, serve.ErrInvalidDecision):
		// Refused once more than it may be asked again: the refusal is
		// its answer (fail closed), the relay's, naming whose decision
		// it refused.
		r.log.Warn("hub decision refused; the ask is denied", "ask", oa.id, "approver", d.Approver, "err", err)
		err = r.srv.Decide(serve.Decision{Ask: oa.id, State: wire.StateDeniedWithReason,
			Reason: refused(d.approverOf(), err), Unattended: true})
	}
	if errors.Is(err, serve.ErrStopped) {
		_ = msg.Nak() // the next relay delivers it
		return
	}
	if (err == nil || errors.Is(err, serve.ErrAlreadyDecided)) && r.hold(key, seq, msg) {
		return // acked once answered: an answer waiting for the audit log may never be
	}
	if err != nil && !errors.Is(err, serve.ErrAlreadyDecided) && !serve.IsExpired(err) {
		r.log.Error("hub decision not delivered", "ask", oa.id, "approver", d.Approver, "err", err)
	}
	r.finishDecision(seq, msg.Ack)
}

// askAgain lets go of the hub's copy of oa at key, whose decision (msg, at
// seq) by approver the server refused with err, saying why, and sends the
// ask again under another name, so that a person can decide it (its key's
// one decision is taken, decision 0161). It reports false, the refusal
// then being the ask's answer, once the ask was asked again maxAskedAgain
// times; a copy let go of meanwhile has its decision acked (decision 0273).
func (r *Relay) askAgain(key string, seq uint64, msg jetstream.Msg, oa *openAsk, approver string, err error) bool {
	data, _ := json.Marshal(goneMsg{Refused: refusedWhy(approver, err)}) // plain data: it always encodes
	r.mu.Lock()
	switch {
	case r.before[key] == oa:
		// Judged again meanwhile: kept with the ask (decision 0290).
		oa.keep(seq, msg)
		r.mu.Unlock()
		return true
	case r.open[key] != oa:
		// Let go of meanwhile (answered, withdrawn): a decision made on
		// this copy answers nothing.
		r.mu.Unlock()
		r.finishDecision(seq, msg.Ack)
		return true
	case len(oa.earlier) >= maxAskedAgain:
		r.mu.Unlock()
		return false
	}
	r.log.Warn("hub decision refused; the ask is asked again", "ask", oa.id, "approver", approver, "err", err)
	oa.keep(seq, msg)
	oa.earlier = append(oa.earlier, key)
	r.before[key] = oa
	delete(r.open, key)
	next := fmt.Sprintf("%s-%d", oa.earlier[0], len(oa.earlier))
	gone := r.message(false, key, data)
	oa.msg = r.message(true, next, oa.msg.data)
	again := r.reopen(oa, next)
	r.open[next], r.keys[oa.id] = oa, next
	r.queue = append(r.queue, gone, oa.msg)
	r.mu.Unlock()
	nakAll(again)
	notify(r.wake)
	return true
}

// unknownAsk offers a decision for an ask this relay does not know again,
// or gives it up (unknownDecision): its request went while this relay was
// away, and consoles still show it, so it is let go of there, saying so
// (finding F11).
func (r *Relay) unknownAsk(key string, msg jetstream.Msg, offered uint64, onDisk bool, done func(func() error)) {
	if giveUp, delay := unknownDecision(offered, onDisk); !giveUp {
		_ = msg.NakWithDelay(delay)
		return
	}
	r.log.Warn("decision for an ask no longer here given up", "key", key)
	r.sendGone(key, goneMsg{Unknown: true})
	done(msg.Term)
}

// deliver hands a hub decision to the server, as made from the scopes the
// hub was sent: the server refuses it when they are no longer its own.
func (r *Relay) deliver(oa *openAsk, d decisionMsg) error {
	if _, ok := oa.offered.Find(d.Scope); d.Scope != "" && !ok {
		return fmt.Errorf("%w: scope %q was not offered at the hub", serve.ErrInvalidDecision, d.Scope)
	}
	return r.srv.Decide(serve.Decision{Ask: oa.id, State: d.State, Reason: d.Reason, Scope: d.Scope, Grants: d.Grants, EditDenies: d.EditDenies,
		Unattended: d.Unattended, Approver: d.approverOf(), ScopesRev: oa.ask.Scopes.Rev})
}

// unknownDecision says what becomes of a decision for an ask this relay
// does not know, offered n times to this relay process: offered again
// after delay, or given up. Counted by the hub, the offers of an earlier
// process (a held decision, offered again every ack wait) gave it up
// before the ask it answers was sent again (decision 0291).
// While asks for a person wait on disk (beyond serve's memory budget) the
// ask may be one of them, queued only as room frees, so its decision waits
// as long: given up, the person's answer would be lost and the child left to
// time out (decision 0209). Otherwise, once the inbox has had time to
// deliver every request again, the request is gone, and its decision would
// hold a consumer slot until the retention ends.
func unknownDecision(n uint64, asksOnDisk bool) (giveUp bool, delay time.Duration) {
	switch {
	case asksOnDisk:
		return false, onDiskDelay
	case n >= maxUnknownDeliveries:
		return true, 0
	}
	return false, unknownDelay
}

// unreadable is what the relay decides for an ask whose place in the
// decisions bucket holds no decision it can record: it is the ask's one
// place (decision 0161), so nobody can decide the ask any more, and the
// relay denies it, naming no person as its decider (decision 0193).
func unreadable(err error) decisionMsg {
	return decisionMsg{State: wire.StateDeniedWithReason, Reason: UnreadablePrefix + err.Error(), Unattended: true}
}

// marked reports whether approver marked data, the decision at key, as its
// own (decision 0212): only its credentials can write the mark. The mark
// is written before its decision, but a replica of a cluster's stream may
// answer before it holds it, so one not found is looked up again, markTries
// times in all; an error is a hub that did not answer.
func (r *Relay) marked(ctx context.Context, key string, data []byte, approver string) (bool, error) {
	subject := hub.MarkGetSubject(hub.MarkKey(hub.DecisionKey(r.host, key), approver, data))
	wait := retryFirst
	for try := 1; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, hubTimeout)
		resp, err := r.nc.RequestWithContext(rctx, subject, nil)
		cancel()
		if err != nil {
			return false, err
		}
		switch status := resp.Header.Get("Status"); {
		case status == "":
			return true, nil
		case status != "404":
			return false, fmt.Errorf("direct get: %s %s", status, resp.Header.Get("Description"))
		case try == markTries:
			return false, nil
		}
		if !await(ctx, time.After(wait)) {
			return false, ctx.Err() // stopping: the next relay looks again
		}
		wait *= 2
	}
}

// markTries: a mark not found after this many looks (0.75 s apart in all)
// is not there.
const markTries = 3

// readDecision reads a decision message; a delete or purge marker is none.
func readDecision(msg jetstream.Msg) (decisionMsg, error) {
	var d decisionMsg
	if op := msg.Headers().Get(kvOperation); op != "" {
		return d, fmt.Errorf("a %s marker in place of a decision", wire.QuoteShort(op))
	}
	err := json.Unmarshal(msg.Data(), &d)
	if err == nil {
		err = d.check()
	}
	if err != nil {
		return decisionMsg{}, fmt.Errorf("%w: %v", errBadMessage, err)
	}
	return d, nil
}

// watchGrants follows its host's grants in the bucket; a change reaches the
// server, which judges later asks with it and re-judges pending ones.
func (r *Relay) watchGrants(ctx context.Context) {
	watchGrants(ctx, r.js, r.log, r.host, false, func(_, session string, grants []wire.Grant, rev uint64) {
		changed, ignored, revoked := r.grants.set(session, grants, rev)
		if len(ignored) > 0 {
			r.log.Warn("grants in the hub's bucket that this relay never recorded are not applied (decision 0247)",
				"session", session, "grants", ignored)
		}
		r.grantsChanged(session, changed, revoked)
	})
}

// grantsChanged tells the server of a change to its grants from the hub,
// recording the revocations in its audit log as its own are (decision 0247).
func (r *Relay) grantsChanged(session string, changed bool, revoked []wire.Grant) {
	if len(revoked) > 0 {
		r.srv.GrantsRevoked(session, revoked)
	}
	if changed {
		r.srv.GrantsUpdated()
	}
}

// writeGrants writes the grants this relay's server recorded to the grants
// bucket, merged with compare-and-set, retrying until the bucket takes them;
// at the end it tries once more.
func (r *Relay) writeGrants(ctx context.Context) {
	var kv jetstream.KeyValue
	wait := retryFirst
	for {
		if ctx.Err() != nil || !await(ctx, r.grants.added) {
			flush, cancel := context.WithTimeout(context.Background(), publishTimeout)
			r.flushGrants(flush, &kv)
			cancel()
			return
		}
		if r.flushGrants(ctx, &kv) {
			wait = retryFirst
			continue
		}
		notify(r.grants.added)
		await(ctx, time.After(wait)) // an end is seen above: one final try
		wait = min(wait*2, retryMax)
	}
}

// flushGrants writes every unsent session's grants under its host's keys,
// then publishes the grants it applies where they changed; it reports
// success.
func (r *Relay) flushGrants(ctx context.Context, kv *jetstream.KeyValue) bool {
	unsent := r.grants.takeUnsent()
	var err error
	if *kv == nil && len(unsent) > 0 {
		*kv, err = r.js.KeyValue(ctx, hub.GrantsBucket)
	}
	ok := true
	for session, grants := range unsent {
		var rev uint64
		if err == nil {
			c, cancel := context.WithTimeout(ctx, hubTimeout)
			rev, err = updateGrants(c, *kv, r.host, session, func(l []wire.Grant) []wire.Grant { return merge(l, grants) })
			cancel()
		}
		if err != nil {
			r.grants.putBack(session, grants)
			ok = false
			continue
		}
		changed, revoked := r.grants.written(session, grants, rev)
		r.grantsChanged(session, changed, revoked)
	}
	if !ok {
		r.log.Warn("grants not written to the hub yet; retrying", "err", err)
	}
	return r.publishApplied(ctx) && ok
}

// publishApplied publishes each session's grants this relay applies whose
// list changed, or the bucket listed, since the last time, under a key only
// its credentials may write: consoles list these, not the bucket, where
// approver credentials may write grants no relay applies (decision 0274).
func (r *Relay) publishApplied(ctx context.Context) bool {
	ok := true
	for session, grants := range r.grants.takeApplied() {
		data, err := json.Marshal(grantsMsg{Session: session, Grants: grants})
		if err == nil {
			c, cancel := context.WithTimeout(ctx, hubTimeout)
			_, err = r.js.Publish(c, hub.GrantSubjectPrefix+hub.AppliedKey(r.host, session), data)
			cancel()
		}
		if err != nil {
			r.log.Warn("grants applied not published to the hub yet; retrying", "err", err)
			r.grants.applyAgain(session)
			ok = false
		}
	}
	return ok
}
