package relay

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/wire"
)

// errRevokeAtConsole: a relay cannot write the grants bucket.
var errRevokeAtConsole = errors.New("relay: whole-session grants are revoked at a console attached to the hub")

// Grants is a relay's serve.GrantStore: the grants bucket as last seen.
// Add is called by serve once it recorded a decision's grants: they apply
// here at once and the relay writes them to the bucket (decision 0160).
type Grants struct {
	mu     sync.Mutex
	by     map[string][]wire.Grant
	unsent map[string][]wire.Grant // added here, not yet in the bucket
	added  chan struct{}           // wakes the relay's writer
}

func NewGrants() *Grants {
	return &Grants{by: map[string][]wire.Grant{}, unsent: map[string][]wire.Grant{}, added: make(chan struct{}, 1)}
}

func (g *Grants) For(session string) []wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.by[session])
}

func (g *Grants) Add(session string, grants []wire.Grant) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.by[session] = merge(g.by[session], grants)
	g.unsent[session] = merge(g.unsent[session], grants)
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

// set replaces a session's grants with the bucket's value; it reports a change.
func (g *Grants) set(session string, grants []wire.Grant) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if slices.Equal(g.by[session], grants) {
		return false
	}
	if len(grants) == 0 {
		delete(g.by, session)
	} else {
		g.by[session] = slices.Clone(grants)
	}
	return true
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
// each session's grants as they are now (nil once deleted). It waits for the
// hub when it is away.
func watchGrants(ctx context.Context, js jetstream.JetStream, log *slog.Logger, apply func(session string, grants []wire.Grant)) {
	sessions := map[string]string{} // bucket key → session
	for ctx.Err() == nil {
		kv, err := js.KeyValue(ctx, hub.GrantsBucket)
		var w jetstream.KeyWatcher
		if err == nil {
			w, err = kv.WatchAll(ctx)
		}
		if err != nil {
			log.Warn("grants watch not ready; retrying", "err", err)
			await(ctx, time.After(retryMax))
			continue
		}
		for e := range w.Updates() {
			if e == nil {
				continue // the initial values are in
			}
			if session, grants, ok := decodeGrants(e, sessions); ok {
				apply(session, grants)
			}
		}
		_ = w.Stop()
	}
}

// decodeGrants reads one update of the grants bucket; sessions remembers
// which session a key names so that a delete can be applied.
func decodeGrants(e jetstream.KeyValueEntry, sessions map[string]string) (string, []wire.Grant, bool) {
	if e.Operation() != jetstream.KeyValuePut {
		s, ok := sessions[e.Key()]
		delete(sessions, e.Key())
		return s, nil, ok
	}
	var m grantsMsg
	if err := json.Unmarshal(e.Value(), &m); err != nil || hub.SessionKey(m.Session) != e.Key() {
		return "", nil, false
	}
	sessions[e.Key()] = m.Session
	return m.Session, m.Grants, true
}
