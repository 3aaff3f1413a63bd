package relay

import (
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

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// ErrNotReady: the approver has not reached the hub yet.
var ErrNotReady = errors.New("relay: not attached to the hub yet")

const hubTimeout = 5 * time.Second

// Approver attaches a console or headless approver to the hub: it is a
// serve.Source whose events are the asks of every relay (with their host)
// and whose Decide records the decision in the decisions bucket, where the
// first decision for an ask is the only one.
type Approver struct {
	name   string
	js     jetstream.JetStream
	log    *slog.Logger
	events *serve.EventQueue
	now    func() time.Time

	mu        sync.Mutex
	decisions jetstream.KeyValue
	grantsKV  jetstream.KeyValue
	next      serve.AskID
	byKey     map[string]*hubAsk // host.key
	byID      map[serve.AskID]*hubAsk
	closed    map[string]bool // host.key of asks answered or withdrawn
	grants    map[string][]wire.Grant
}

type hubAsk struct {
	host, key string
	ask       serve.Ask
}

// NewApprover makes an approver named name (its credentials' name, which
// relays record in their audit records) over an authenticated connection.
func NewApprover(nc *nats.Conn, name string, log *slog.Logger) (*Approver, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Approver{
		name: name, js: js, log: log, events: serve.NewEventQueue(), now: time.Now,
		byKey: map[string]*hubAsk{}, byID: map[serve.AskID]*hubAsk{},
		closed: map[string]bool{}, grants: map[string][]wire.Grant{},
	}, nil
}

// Events are AskQueued for each open ask of any relay, then Decided or
// Withdrawn when its relay reports it answered or gone, and GrantsChanged.
// The channel closes after Run returns.
func (a *Approver) Events() <-chan serve.Event { return a.events.Out() }

// Run follows the hub until ctx ends, waiting for it while it is away.
func (a *Approver) Run(ctx context.Context) {
	defer a.events.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchGrants(ctx, a.js, a.log, a.grantsChanged)
	}()
	defer wg.Wait()
	for ctx.Err() == nil {
		dec, err := a.js.KeyValue(ctx, hub.DecisionsBucket)
		var gr jetstream.KeyValue
		if err == nil {
			gr, err = a.js.KeyValue(ctx, hub.GrantsBucket)
		}
		var cons jetstream.Consumer
		if err == nil {
			cons, err = a.js.OrderedConsumer(ctx, hub.AsksStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		}
		var cc jetstream.ConsumeContext
		if err == nil {
			cc, err = cons.Consume(a.onAsk)
		}
		if err != nil {
			a.log.Warn("hub not ready; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(retryMax):
			}
			continue
		}
		a.mu.Lock()
		a.decisions, a.grantsKV = dec, gr
		a.mu.Unlock()
		<-ctx.Done()
		cc.Stop()
	}
}

// onAsk reads permtui.ask.<host>.<key> and permtui.gone.<host>.<key>.
func (a *Approver) onAsk(msg jetstream.Msg) {
	tok := strings.Split(msg.Subject(), ".")
	if len(tok) != 4 {
		return
	}
	kind, host, hk := tok[1], tok[2], tok[2]+"."+tok[3]
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed[hk] {
		return
	}
	switch kind {
	case "ask":
		if a.byKey[hk] != nil {
			return // sent again after a reconnect
		}
		m, req, err := decodeAsk(msg.Data())
		if err == nil && m.Host != host {
			err = fmt.Errorf("%w: host %s on %s's subject", errBadMessage, wire.QuoteShort(m.Host), host)
		}
		if err != nil {
			a.log.Warn("ask not shown", "subject", msg.Subject(), "err", err)
			return
		}
		a.next++
		h := &hubAsk{host: host, key: tok[3], ask: serve.Ask{
			Arrived: inbox.Arrived{ID: a.next, Session: m.Session, Path: m.Path, Request: req, At: time.UnixMilli(m.At)},
			Verdict: m.Verdict,
			Scopes:  serve.OfferedScopes(req),
			Host:    host,
		}}
		a.byKey[hk], a.byID[h.ask.ID] = h, h
		a.events.Push(serve.AskQueued{Ask: h.ask})
	case "gone":
		if len(a.closed) >= 1<<16 {
			clear(a.closed) // old asks are not delivered again: the consumer only moves on
		}
		a.closed[hk] = true
		h := a.byKey[hk]
		if h == nil {
			return
		}
		delete(a.byKey, hk)
		delete(a.byID, h.ask.ID)
		var g goneMsg
		if err := json.Unmarshal(msg.Data(), &g); err != nil || g.Response == nil {
			a.events.Push(serve.Withdrawn{Withdrawn: inbox.Withdrawn{ID: h.ask.ID, Session: h.ask.Session, Path: h.ask.Path}, Pending: true})
			return
		}
		a.events.Push(serve.Decided{Ask: h.ask, Response: *g.Response, Auto: g.Auto, Approver: g.Approver, Queued: true,
			Latency: a.now().Sub(h.ask.At)})
	}
}

func (a *Approver) grantsChanged(session string, grants []wire.Grant) {
	a.mu.Lock()
	if len(grants) == 0 {
		delete(a.grants, session)
	} else {
		a.grants[session] = grants
	}
	all := maps.Clone(a.grants)
	a.mu.Unlock()
	a.events.Push(serve.GrantsChanged{Grants: all})
}

// Decide records d in the decisions bucket unless another approver decided
// the ask first; then the error names who did. A whole-session approval
// also records its grants in the grants bucket, where every relay serving
// that root session applies them.
func (a *Approver) Decide(d serve.Decision) error {
	a.mu.Lock()
	h, dec, gr := a.byID[d.Ask], a.decisions, a.grantsKV
	a.mu.Unlock()
	switch {
	case dec == nil:
		return ErrNotReady
	case h == nil:
		return serve.ErrUnknownAsk
	}
	grants, err := checkDecision(h.ask, d)
	if err != nil {
		return err
	}
	data, err := json.Marshal(decisionMsg{State: d.State, Reason: d.Reason, Scope: d.Scope, Unattended: d.Unattended,
		Approver: a.name, DecidedAt: a.now().UnixMilli()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hubTimeout)
	defer cancel()
	key := hub.DecisionKey(h.host, h.key)
	if _, err := dec.Create(ctx, key, data); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("hub: %w", err)
		}
		winner := "another approver"
		if e, gerr := dec.Get(ctx, key); gerr == nil {
			var w decisionMsg
			if json.Unmarshal(e.Value(), &w) == nil && w.Approver != "" {
				winner = wire.QuoteShort(w.Approver)
			}
		}
		return fmt.Errorf("%w by %s", serve.ErrAlreadyDecided, winner)
	}
	if len(grants) > 0 {
		if err := updateGrants(ctx, gr, h.ask.Session, func(l []wire.Grant) []wire.Grant { return merge(l, grants) }); err != nil {
			return fmt.Errorf("decision recorded, but not its whole-session grants: %w", err)
		}
	}
	return nil
}

// checkDecision refuses what the relay's server would refuse, before the
// decision becomes final at the hub; it returns the whole-session grants the
// decision records (the scope's, as serve offered it for this request).
func checkDecision(a serve.Ask, d serve.Decision) ([]wire.Grant, error) {
	if d.DenyFor != nil {
		return nil, fmt.Errorf("%w: %w", serve.ErrInvalidDecision, errDenyAtHub)
	}
	if d.Scope != "" {
		scope, ok := a.Scopes.Find(d.Scope)
		if d.State != "" || d.Unattended || !ok {
			return nil, fmt.Errorf("%w: scope %q is not offered for this ask", serve.ErrInvalidDecision, d.Scope)
		}
		if d.Scope == serve.ScopeSession || d.Scope == serve.ScopeSessionBoth {
			return scope.Grants, nil
		}
		return nil, nil
	}
	switch d.State {
	case wire.StateApproved:
		if d.Unattended {
			return nil, fmt.Errorf("%w: only a denial can be made with nobody attached", serve.ErrInvalidDecision)
		}
		return nil, nil
	case wire.StateDenied, wire.StateDeniedWithReason:
		return nil, nil
	}
	return nil, fmt.Errorf("%w: unknown state %q", serve.ErrInvalidDecision, d.State)
}

// errDenyAtHub: session denies (decision 0104) are kept by a local server
// only; the hub's buckets carry grants, not denies.
var errDenyAtHub = errors.New("a deny for the session is not kept over a hub")

// RevokeDeny: the hub keeps no session denies.
func (a *Approver) RevokeDeny(string, serve.SessionDeny) error { return errDenyAtHub }

// RevokeGrant removes a whole-session grant from the grants bucket; every
// relay judges later asks without it.
func (a *Approver) RevokeGrant(session string, g wire.Grant) error {
	a.mu.Lock()
	gr := a.grantsKV
	a.mu.Unlock()
	if gr == nil {
		return ErrNotReady
	}
	ctx, cancel := context.WithTimeout(context.Background(), hubTimeout)
	defer cancel()
	return updateGrants(ctx, gr, session, func(l []wire.Grant) []wire.Grant {
		return slices.DeleteFunc(slices.Clone(l), func(x wire.Grant) bool { return x == g })
	})
}

// updateGrants changes a session's grants with compare-and-set, so two
// consoles recording at once both count.
func updateGrants(ctx context.Context, kv jetstream.KeyValue, session string, change func([]wire.Grant) []wire.Grant) error {
	key := hub.SessionKey(session)
	for {
		var cur grantsMsg
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &cur); err != nil {
				return fmt.Errorf("grants bucket: %w", err)
			}
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return err
		}
		data, err := json.Marshal(grantsMsg{Session: session, Grants: change(cur.Grants)})
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, data)
		} else {
			_, err = kv.Update(ctx, key, data, rev)
		}
		if err == nil || ctx.Err() != nil {
			return err
		}
		// Another console changed them in between: read again.
	}
}
