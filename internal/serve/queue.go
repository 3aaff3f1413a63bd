package serve

import (
	"reflect"
	"slices"
	"sync"

	"github.com/permtui/permtui/internal/wire"
)

// EventQueue hands events to a consumer in order: the buffer grows while the
// consumer is slow, so the serving loop never blocks on a front end. Past
// MaxBufferedEvents (a frozen terminal, a blocked stdout) the events that
// only report (arrivals, automatic answers to asks no person was shown,
// refused files) are counted in a Skipped event instead of kept, an ask
// answered or gone before the consumer was even sent it leaves the buffer
// with its answer, and only the latest grants, denies, policy state and
// each ask's scopes wait, so a stalled front end cannot make the process
// keep every request it answers (decision 0118). Everything a front end needs to stay true to
// what it was sent is kept, in order.
type EventQueue struct {
	out    chan Event
	signal chan struct{}
	stop   chan struct{} // closed by Stop
	once   sync.Once

	mu     sync.Mutex
	buf    []Event
	closed bool
}

// NewEventQueue starts a queue; read its events from Out.
func NewEventQueue() *EventQueue {
	q := &EventQueue{out: make(chan Event, 64), signal: make(chan struct{}, 1), stop: make(chan struct{})}
	go q.pump()
	return q
}

// Out delivers the pushed events in order; it closes after Close.
func (q *EventQueue) Out() <-chan Event { return q.out }

// MaxBufferedEvents is how many events wait for a slow consumer before the
// ones that only report are counted instead of kept.
const MaxBufferedEvents = 4096

// Push queues an event; after Close it is dropped.
func (q *EventQueue) Push(ev Event) {
	q.mu.Lock()
	if !q.closed && !q.fold(ev) {
		q.buf = append(q.buf, ev)
	}
	q.mu.Unlock()
	poke(q.signal)
}

// fold counts ev in a Skipped event at the end of a full buffer, when ev
// only reports or cancels an ask still buffered, or lets it replace the
// buffered state it supersedes. q.mu is held.
func (q *EventQueue) fold(ev Event) bool {
	if len(q.buf) < MaxBufferedEvents {
		return false
	}
	var sk Skipped
	switch ev := ev.(type) {
	case Arrived:
		sk.Arrived = 1
	case Decided:
		switch {
		case ev.Queued && !q.unqueue(ev.Ask.ID):
			return false
		case ev.Auto && ev.Response.Approved:
			sk.AutoApproved = 1
		case ev.Auto:
			sk.AutoDenied = 1
		case ev.Response.Approved:
			sk.Approved = 1
		case ev.Response.DecidedBy != nil && ev.Response.DecidedBy.Kind == wire.DecidedByUnavailable:
			sk.Unavailable = 1
		default:
			sk.Denied = 1
		}
	case Withdrawn:
		if !ev.Pending || !q.unqueue(ev.ID) {
			return false
		}
		sk.Expired = 1
	case Invalid:
		sk.Invalid = 1
	case GrantsChanged, DeniesChanged, PolicyStatus: // ev replaces the state buffered before it
		q.drop(func(e Event) bool { return reflect.TypeOf(e) == reflect.TypeOf(ev) })
		return false
	case ScopesChanged: // only an ask's latest scopes are current, and at most one waits
		q.drop(func(e Event) bool { c, ok := e.(ScopesChanged); return ok && c.Ask == ev.Ask })
		return false
	default:
		return false
	}
	// The latest Skipped waiting takes the counts: they need no place of
	// their own, and it is near the end.
	for i := len(q.buf) - 1; i >= 0; i-- {
		if prev, ok := q.buf[i].(Skipped); ok {
			q.buf[i] = prev.add(sk)
			return true
		}
	}
	q.buf = append(q.buf, sk)
	return true
}

// unqueue takes the AskQueued of id out of the buffer, if the consumer has
// not been sent it yet: it never sees an ask already answered or gone.
// q.mu is held.
func (q *EventQueue) unqueue(id AskID) bool {
	return q.drop(func(e Event) bool { a, ok := e.(AskQueued); return ok && a.Ask.ID == id })
}

// drop takes the first buffered event match matches out, if any. q.mu is
// held.
func (q *EventQueue) drop(match func(Event) bool) bool {
	i := slices.IndexFunc(q.buf, match)
	if i >= 0 {
		q.buf = slices.Delete(q.buf, i, i+1)
	}
	return i >= 0
}

// Close lets the pump deliver what is queued, then close the channel.
func (q *EventQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	poke(q.signal)
}

// Stop closes Out without delivering what is queued, for a consumer that
// stopped reading: its pump does not wait on it for ever.
func (q *EventQueue) Stop() {
	q.once.Do(func() { close(q.stop) })
	q.Close()
}

// poke wakes the one waiter on c, if it is not already woken.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *EventQueue) pump() {
	for {
		q.mu.Lock()
		for len(q.buf) == 0 {
			if q.closed {
				q.mu.Unlock()
				close(q.out)
				return
			}
			q.mu.Unlock()
			select {
			case <-q.signal:
			case <-q.stop:
				close(q.out)
				return
			}
			q.mu.Lock()
		}
		ev := q.buf[0]
		q.buf[0] = nil
		q.buf = q.buf[1:]
		q.mu.Unlock()
		select {
		case q.out <- ev:
		case <-q.stop:
			close(q.out)
			return
		}
	}
}
