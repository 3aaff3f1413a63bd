package notify

import (
	"time"

	"github.com/permtui/permtui/internal/serve"
)

// reminders keeps one expiry timer per waiting ask, owned by Run's loop.
// Each timer has its own generation: one already firing when its ask is
// answered and queued again under the same AskID (a hub ask shown again)
// is stale, and must neither remind early nor disarm the new timer.
type reminders struct {
	after time.Duration
	gen   uint64
	armed map[serve.AskID]armed
	due   chan reminder
	quit  chan struct{} // a reminder due after the loop ends goes nowhere
}

type armed struct {
	gen uint64
	t   *time.Timer
}

// reminder is a fired timer's word that its ask is about to expire.
type reminder struct {
	id  serve.AskID
	gen uint64
}

func newReminders(after time.Duration) *reminders {
	return &reminders{after: after, armed: map[serve.AskID]armed{}, due: make(chan reminder), quit: make(chan struct{})}
}

// arm starts id's timer unless one runs.
func (rs *reminders) arm(id serve.AskID) {
	if _, ok := rs.armed[id]; ok {
		return
	}
	rs.gen++
	r := reminder{id: id, gen: rs.gen}
	rs.armed[id] = armed{gen: r.gen, t: time.AfterFunc(rs.after, func() {
		select {
		case rs.due <- r:
		case <-rs.quit:
		}
	})}
}

// cancel stops id's timer; one already firing is told apart by take.
func (rs *reminders) cancel(id serve.AskID) {
	if a, ok := rs.armed[id]; ok {
		a.t.Stop()
		delete(rs.armed, id)
	}
}

// take reports whether r is the fire of its ask's armed timer, and
// disarms it; a stale fire changes nothing.
func (rs *reminders) take(r reminder) bool {
	if a, ok := rs.armed[r.id]; !ok || a.gen != r.gen {
		return false
	}
	delete(rs.armed, r.id)
	return true
}

// stop ends every timer; Run's loop has ended.
func (rs *reminders) stop() {
	close(rs.quit)
	for _, a := range rs.armed {
		a.t.Stop()
	}
}
