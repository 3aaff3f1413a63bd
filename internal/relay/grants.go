package relay

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// errRevokeAtConsole: a relay cannot write the grants bucket.
var errRevokeAtConsole = errors.New("relay: whole-session grants are revoked at a console attached to the hub")

// Grants is a relay's serve.GrantStore: the grants bucket as last seen,
// with the grants this relay's server recorded that the bucket does not
// show yet. Add is called by serve once it recorded a decision's grants:
// they apply here at once and the relay writes them to the bucket
// (decision 0160); a list from the bucket that does not have them yet
// does not take them away, a later one without them does (decision 0194).
// The bucket only narrows: a grant in it that this relay never recorded
// (approver credentials may write there) is not applied (decision 0247).
type Grants struct {
	mu      sync.Mutex
	by      map[string][]wire.Grant // as applied: the bucket's, then the pending
	bucket  map[string]bucketList
	pending map[string][]pendingGrant
	unsent  map[string][]wire.Grant // added here, not yet written
	added   chan struct{}           // wakes the relay's writer
	// applied: sessions whose grants as applied are to be published for
	// consoles (hub.AppliedKey): changed, or listed by the bucket.
	applied map[string]bool
	// own are the grants this relay's server recorded, in this process or
	// (its audit log) before, and not revoked since: all the bucket may
	// apply here.
	own map[string][]wire.Grant
}

// bucketList is a session's grants as the bucket last showed them, at its
// revision (the stream sequence, one order for every key).
type bucketList struct {
	grants []wire.Grant
	rev    uint64
}

// pendingGrant is a grant recorded here that the bucket has not shown.
// written is the revision of the write that took it, 0 before: a list
// from that revision on shows it, or shows it revoked.
type pendingGrant struct {
	grant   wire.Grant
	written uint64
}

func NewGrants() *Grants {
	return &Grants{by: map[string][]wire.Grant{}, bucket: map[string]bucketList{}, pending: map[string][]pendingGrant{},
		unsent: map[string][]wire.Grant{}, added: make(chan struct{}, 1), own: map[string][]wire.Grant{}, applied: map[string]bool{}}
}

// ReadRecorded takes as this relay's own the whole-session grants its
// audit log in stateDir records and does not record revoked since, so
// that after a restart the bucket's copy of them applies again.
func (g *Grants) ReadRecorded(stateDir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := serve.ReadAuditHistory(serve.AuditPath(stateDir), func(rec serve.AuditRecord) {
		switch {
		case rec.Kind == serve.AuditRevoked:
			g.own[rec.ServedSession] = slices.DeleteFunc(g.own[rec.ServedSession], func(x wire.Grant) bool { return slices.Contains(rec.Grants, x) })
		case rec.Kind == "" && rec.State == wire.StateApprovedForServingSession:
			g.own[rec.ServedSession] = merge(g.own[rec.ServedSession], rec.Grants)
		}
	})
	return err
}

func (g *Grants) For(session string) []wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.by[session])
}

func (g *Grants) Add(session string, grants []wire.Grant) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gr := range grants {
		if !slices.ContainsFunc(g.pending[session], func(p pendingGrant) bool { return p.grant == gr }) {
			g.pending[session] = append(g.pending[session], pendingGrant{grant: gr})
		}
	}
	g.unsent[session] = merge(g.unsent[session], grants)
	g.own[session] = merge(g.own[session], grants)
	g.apply(session)
	notify(g.added)
	return nil
}

// takeUnsent hands the grants not yet written to the bucket to the writer.
func (g *Grants) takeUnsent() map[string][]wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.unsent
	g.unsent = map[string][]wire.Grant{}
	return out
}

// takeApplied hands the writer each session whose grants as applied are to
// be published, with those grants.
func (g *Grants) takeApplied() map[string][]wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]wire.Grant, len(g.applied))
	for s := range g.applied {
		out[s] = slices.Clone(g.by[s])
	}
	clear(g.applied)
	return out
}

// applyAgain marks a session whose grants as applied the writer could not
// publish.
func (g *Grants) applyAgain(session string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.applied[session] = true
}

// putBack returns grants the writer could not write.
func (g *Grants) putBack(session string, grants []wire.Grant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unsent[session] = merge(grants, g.unsent[session])
}

func (g *Grants) Revoke(string, wire.Grant) error { return errRevokeAtConsole }

func (g *Grants) All() map[string][]wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]wire.Grant, len(g.by))
	for s, l := range g.by {
		out[s] = slices.Clone(l)
	}
	return out
}

// set takes the bucket's list of a session's grants at revision rev: the
// grants it lists that this relay never recorded are ignored, not applied.
// It reports a change and the grants the list revoked here.
func (g *Grants) set(session string, grants []wire.Grant, rev uint64) (changed bool, ignored, revoked []wire.Grant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rev < g.bucket[session].rev {
		return false, nil, nil // older than a list already applied
	}
	mine := slices.DeleteFunc(slices.Clone(grants), func(x wire.Grant) bool {
		if slices.Contains(g.own[session], x) {
			return false
		}
		ignored = append(ignored, x)
		return true
	})
	g.bucket[session] = bucketList{grants: mine, rev: rev}
	changed, revoked = g.apply(session)
	return changed, ignored, revoked
}

// written notes that the bucket took grants at revision rev; it reports a
// change (a list already seen from then on did not have them: revoked)
// and the grants so revoked.
func (g *Grants) written(session string, grants []wire.Grant, rev uint64) (bool, []wire.Grant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, p := range g.pending[session] {
		if p.written == 0 && slices.Contains(grants, p.grant) {
			g.pending[session][i].written = rev
		}
	}
	return g.apply(session)
}

// apply makes a session's grants the bucket's list and the pending grants
// it has not shown: a pending grant it shows, or that a write before the
// list put there, is the bucket's from now on, so a list without it is
// its revocation, and it is no longer this relay's own. It reports a
// change and the grants revoked. g.mu is held.
func (g *Grants) apply(session string) (bool, []wire.Grant) {
	b := g.bucket[session]
	pending := slices.DeleteFunc(g.pending[session], func(p pendingGrant) bool {
		return slices.Contains(b.grants, p.grant) || (p.written != 0 && p.written <= b.rev)
	})
	by := slices.Clone(b.grants)
	for _, p := range pending {
		by = merge(by, []wire.Grant{p.grant})
	}
	g.pending[session] = pending
	g.applied[session] = true
	notify(g.added)
	if len(pending) == 0 {
		// The bucket's list stays, even empty: its revision keeps an older
		// list (a stopped consumer's last callback) from undoing a revocation.
		delete(g.pending, session)
	}
	if b.rev != 0 {
		g.own[session] = slices.DeleteFunc(g.own[session], func(x wire.Grant) bool { return !slices.Contains(by, x) })
	}
	revoked := slices.DeleteFunc(slices.Clone(g.by[session]), func(x wire.Grant) bool { return slices.Contains(by, x) })
	if slices.Equal(g.by[session], by) {
		return false, nil
	}
	if len(by) == 0 {
		delete(g.by, session)
	} else {
		g.by[session] = by
	}
	return true, revoked
}

// merge appends the grants not already in list.
func merge(list, grants []wire.Grant) []wire.Grant {
	list = slices.Clone(list)
	for _, gr := range grants {
		if !slices.Contains(list, gr) {
			list = append(list, gr)
		}
	}
	return list
}

// watchGrants follows the grants bucket until ctx ends, calling apply with
// each host's grants of a session as they are now (nil once deleted) and
// the bucket's revision of them: the grants its relay recorded, or with
// applied those it applies (hub.AppliedKey). It waits for the hub when it is away. A
// relay (host non-empty) follows only its host's keys, through the one
// consumer its permissions allow (hub.GrantsConsumer), made anew each time;
// an approver (host empty) follows every host's through an ordered
// consumer. A key not of the layout <host>.<session digest> (an older
// hub's, decision 0211) is never applied.
func watchGrants(ctx context.Context, js jetstream.JetStream, log *slog.Logger, host string, applied bool, apply func(host, session string, grants []wire.Grant, rev uint64)) {
	var mu sync.Mutex               // a stopped consumer's last callback may overlap the next one's
	sessions := map[string]string{} // bucket key → session
	take := func(msg jetstream.Msg) {
		mu.Lock()
		h, session, grants, ok := decodeGrants(msg, sessions, applied)
		mu.Unlock()
		if meta, err := msg.Metadata(); ok && (host == "" || h == host) && err == nil {
			apply(h, session, grants, meta.Sequence.Stream)
		}
	}
	consumer := ""
	if host != "" {
		consumer = hub.GrantsConsumer(host)
	}
	for ctx.Err() == nil {
		lost := make(chan struct{}, 1)
		var cc jetstream.ConsumeContext
		cons, err := grantsConsumer(ctx, js, host)
		if err == nil {
			cc, err = cons.Consume(take, pullExpiry, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				if mayBeGone(err) {
					notify(lost)
				}
			}))
		}
		if err != nil {
			log.Warn("grants watch not ready; retrying", "err", err)
			await(ctx, time.After(retryMax))
			continue
		}
		awaitGone(ctx, js, hub.GrantsStream, consumer, lost)
		cc.Stop()
	}
}

// grantsConsumer makes the consumer that follows the grants of host (every
// host's if empty): the latest value of every key, then each change.
func grantsConsumer(ctx context.Context, js jetstream.JetStream, host string) (jetstream.Consumer, error) {
	if host == "" {
		return js.OrderedConsumer(ctx, hub.GrantsStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	}
	name := hub.GrantsConsumer(host)
	// Made anew, so it starts again from every key's latest value.
	if err := js.DeleteConsumer(ctx, hub.GrantsStream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, err
	}
	return js.CreateConsumer(ctx, hub.GrantsStream, jetstream.ConsumerConfig{
		Name:              name,
		FilterSubject:     hub.GrantSubjectPrefix + host + ".>",
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: grantsIdle,
	})
}

// grantsIdle: the hub removes a relay's grants consumer that nobody pulled
// from for this long (a relay killed); a relay away longer makes it again.
const grantsIdle = time.Minute

// mayBeGone: a consume error after which the consumer may no longer exist
// (deleted, or silent: the hub restarted or removed it).
func mayBeGone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrNoHeartbeat)
}

// awaitGone returns when ctx ends or, after a signal on lost, the hub says
// the named consumer does not exist. An ordered consumer (no name) makes
// itself again, so only ctx ends its wait.
func awaitGone(ctx context.Context, js jetstream.JetStream, stream, name string, lost <-chan struct{}) {
	for await(ctx, lost) {
		if name == "" {
			continue
		}
		if _, err := js.Consumer(ctx, stream, name); errors.Is(err, jetstream.ErrConsumerNotFound) {
			return
		}
	}
}

// decodeGrants reads one message of the grants stream: the host and
// session its key names, and their grants. A key must be
// hub.GrantsKey(host, value's session), or with applied its
// hub.AppliedKey; sessions remembers which session a key names so that a
// delete can be applied.
func decodeGrants(msg jetstream.Msg, sessions map[string]string, applied bool) (string, string, []wire.Grant, bool) {
	key := strings.TrimPrefix(msg.Subject(), hub.GrantSubjectPrefix)
	host, _, _ := strings.Cut(key, ".")
	listKey := hub.GrantsKey
	if applied {
		listKey = hub.AppliedKey
	}
	if msg.Headers().Get(kvOperation) != "" {
		s, ok := sessions[key]
		delete(sessions, key)
		return host, s, nil, ok
	}
	var m grantsMsg
	if err := json.Unmarshal(msg.Data(), &m); err != nil || !hub.ValidHost(host) || listKey(host, m.Session) != key {
		return "", "", nil, false
	}
	sessions[key] = m.Session
	return host, m.Session, m.Grants, true
}

// kvOperation is the header of a key-value delete or purge marker.
const kvOperation = "KV-Operation"
