package serve

import "sync"

// EventQueue hands events to a consumer in order without ever dropping one:
// the buffer grows while the consumer is slow, so the serving loop never
// blocks on a front end.
type EventQueue struct {
	out    chan Event
	signal chan struct{}

	mu     sync.Mutex
	buf    []Event
	closed bool
}

// NewEventQueue starts a queue; read its events from Out.
func NewEventQueue() *EventQueue {
	q := &EventQueue{out: make(chan Event, 64), signal: make(chan struct{}, 1)}
	go q.pump()
	return q
}

// Out delivers the pushed events in order; it closes after Close.
func (q *EventQueue) Out() <-chan Event { return q.out }

// Push queues an event; after Close it is dropped.
func (q *EventQueue) Push(ev Event) {
	q.mu.Lock()
	if !q.closed {
		q.buf = append(q.buf, ev)
	}
	q.mu.Unlock()
	q.wake()
}

// Close lets the pump deliver what is queued, then close the channel.
func (q *EventQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *EventQueue) wake() {
	select {
	case q.signal <- struct{}{}:
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
			<-q.signal
			q.mu.Lock()
		}
		ev := q.buf[0]
		q.buf[0] = nil
		q.buf = q.buf[1:]
		q.mu.Unlock()
		q.out <- ev
	}
}
