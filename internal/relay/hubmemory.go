package relay

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/budget"
	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// memoryState is what the approver's budget counts (decision 0127): the
// asks held with their requests, and the asks that wait at the hub with
// only their names kept.
type memoryState struct {
	held    budget.Budget // asks shown, or being read again to be shown
	waiting list.List     // of *hubAsk, oldest first
	// unkeptFrom is the stream sequence of the first ask not kept because
	// the waiting list was full. Later asks are not kept either, so that
	// when the stream is read again from there (replayFrom, once half the
	// list is free) they come back in order.
	unkeptFrom, replayFrom uint64
	reports                budget.Spacing // of the number waiting, and of names not kept
	reportTimer            *time.Timer
}

// memoryReportEvery spaces reports of a changing number of waiting asks;
// when waiting starts or ends, or names stop being kept, it is reported at
// once.
const memoryReportEvery = 5 * time.Second

// keep reports whether an ask first seen at stream sequence seq is kept
// (shown, or waiting by name). One that is not is read from the stream
// again later. a.mu is held.
func (a *Approver) keep(seq uint64) bool {
	m := &a.memory
	if m.unkeptFrom != 0 || m.replayFrom != 0 {
		return false // the stream is read again from an earlier ask
	}
	if m.waiting.Len() < a.budget.DeferredAsks {
		return true
	}
	m.unkeptFrom = seq
	return false
}

// fits reports whether an ask of size bytes may be shown now; one is
// always shown, however large. a.mu is held.
func (a *Approver) fits(size int64) bool {
	held := &a.memory.held
	return held.Count() == 0 || held.Fits(1, size)
}

// afterMemoryChange wakes refill when the oldest waiting ask fits, has the stream
// read again once half the waiting list is free, and reports. a.mu is held.
func (a *Approver) afterMemoryChange() {
	m := &a.memory
	if f := m.waiting.Front(); f != nil && a.fits(f.Value.(*hubAsk).size) {
		notify(a.room)
	}
	if m.unkeptFrom != 0 && m.waiting.Len() <= a.budget.DeferredAsks/2 {
		m.replayFrom, m.unkeptFrom = m.unkeptFrom, 0
		notify(a.replay)
	}
	a.reportMemory()
}

// refill shows waiting asks, oldest first, while they fit.
func (a *Approver) refill(ctx context.Context) {
	for await(ctx, a.room) {
		for h := a.nextWaiting(); h != nil; h = a.nextWaiting() {
			if err := a.showAgain(ctx, h); err != nil {
				a.log.Warn("waiting ask not read from the hub; retrying", "host", h.host, "key", h.key, "err", err)
				if !await(ctx, time.After(retryMax)) {
					return
				}
			}
		}
	}
}

// nextWaiting takes the oldest waiting ask if it fits, and holds its room.
func (a *Approver) nextWaiting() *hubAsk {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.memory.waiting.Front()
	if f == nil || !a.fits(f.Value.(*hubAsk).size) {
		return nil
	}
	h := a.memory.waiting.Remove(f).(*hubAsk)
	h.elem = nil
	a.memory.held.Add(1, h.size)
	return h
}

// showAgain reads a waiting ask from the stream (the last message on its
// subject; the stream keeps one per subject) and shows it under the AskID
// it got when first seen, unless it was answered or withdrawn meanwhile.
// A failure to reach the hub leaves it first in line.
func (a *Approver) showAgain(ctx context.Context, h *hubAsk) error {
	a.mu.Lock()
	st := a.stream
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, hubTimeout)
	defer cancel()
	msg, err := st.GetLastMsgForSubject(ctx, hub.AskSubject(h.host, h.key))
	var goneAt uint64 // 0: not gone
	if err == nil {
		// Its gone message may not have reached this approver's consumer
		// yet; one before the ask closed an earlier publication of it.
		var g *jetstream.RawStreamMsg
		g, err = st.GetLastMsgForSubject(ctx, hub.GoneSubject(h.host, h.key))
		if err == nil && g.Sequence > msg.Sequence {
			goneAt = g.Sequence
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			err = nil
		}
	}
	var m askMsg
	var req *wire.Request
	if err == nil && goneAt == 0 {
		m, req, err = decodeHostAsk(h.host, msg.Data)
	}
	hk := h.host + "." + h.key
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byKey[hk] != h {
		return nil // its gone message came meanwhile; onAsk let go of it
	}
	defer a.afterMemoryChange()
	switch {
	case err == nil && goneAt == 0:
		a.show(h, m, req, int64(len(msg.Data)))
		return nil
	case goneAt != 0:
		a.close(hk, goneAt)
	case errors.Is(err, jetstream.ErrMsgNotFound), errors.Is(err, errBadMessage):
		// Past the retention (its relay sends it again after a reconnect),
		// or no longer an ask: not shown, as when first seen.
		a.log.Warn("waiting ask not shown", "host", h.host, "key", h.key, "err", err)
	default:
		a.memory.held.Release(h.size)
		h.elem = a.memory.waiting.PushFront(h)
		return err
	}
	a.forget(h)
	a.memory.held.Release(h.size)
	return nil
}

// reportMemory reports degraded memory while asks wait unshown. a.mu is
// held.
func (a *Approver) reportMemory() {
	m := &a.memory
	n := m.waiting.Len() + m.held.Count() - len(a.byID) - len(a.heldBack) // held back while the stream is read
	over := m.unkeptFrom != 0 || m.replayFrom != 0
	due, wait := m.reports.Due(n, over, a.now(), memoryReportEvery)
	if wait > 0 && m.reportTimer == nil {
		// One due after Run ended publishes to the closed broker, which
		// drops it, as the inbox's does.
		m.reportTimer = time.AfterFunc(wait, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.memory.reportTimer = nil
			a.reportMemory()
		})
	}
	if !due {
		return
	}
	problem := ""
	if n > 0 || over {
		problem = fmt.Sprintf("asks wait at the hub unshown (%d): at most %d asks or %d MiB of them are held at once; they are shown as earlier asks are answered",
			n, a.budget.ParkedAsks, a.budget.ParkedBytes>>20)
		if over {
			problem += fmt.Sprintf("; past %d waiting, later asks are read from the hub again once room frees", a.budget.DeferredAsks)
		}
	}
	a.events.Publish(serve.Degraded{Area: serve.AreaMemory, Problem: problem})
}
