package serve

import "sync"

// Broker hands every event the server reports to each of its subscribers,
// each through its own EventQueue: a subscriber that stalls keeps only its
// own bounded buffer (decision 0118), and never blocks serving or another
// subscriber (decision 0180).
type Broker struct {
	mu     sync.Mutex
	subs   map[*EventQueue]struct{}
	closed bool
}

// NewBroker makes a broker with no subscribers.
func NewBroker() *Broker { return &Broker{subs: map[*EventQueue]struct{}{}} }

// Subscribe adds a subscriber: it gets every event published from now on,
// in order, and its channel closes after Close (once it has read what was
// queued) or cancel. cancel drops what it has not read; call it when the
// subscriber stops reading before the end.
func (b *Broker) Subscribe() (events <-chan Event, cancel func()) {
	q := NewEventQueue()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		q.Close()
		return q.Out(), func() {}
	}
	b.subs[q] = struct{}{}
	return q.Out(), func() {
		b.mu.Lock()
		delete(b.subs, q)
		b.mu.Unlock()
		q.Stop()
	}
}

// Publish queues ev for every subscriber; it never waits for one.
func (b *Broker) Publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for q := range b.subs {
		q.Push(ev)
	}
}

// Close ends every subscription after what is queued; later Subscribes get
// a closed channel.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for q := range b.subs {
		q.Close()
	}
	clear(b.subs)
}
