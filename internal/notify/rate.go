package notify

import (
	"sync"
	"time"

	"github.com/permtui/permtui/internal/status"
)

// deliverer is one notifier. deliver must not block: it returns false when
// the notifier cannot take the line now (every command slot runs, the
// poster is behind), and the notifier calls the ready func it was made with
// once it can take one again.
type deliverer interface {
	deliver(l status.Line) bool
	wait()  // for what is in flight
	close() // after the last deliver; waits as wait does
}

// rated is the one rate of both notifiers: at most Burst lines per Window
// reach the deliverer; the lines beyond, and those it was too busy to take,
// are counted and go out as one More line as soon as both allow, so a flood
// makes a few notifications and no ask is lost unsaid (decision 0184).
type rated struct {
	o Options
	d deliverer

	mu     sync.Mutex
	sent   []time.Time // lines delivered within the last window
	held   int         // lines counted, not delivered one by one
	last   status.Line // the latest line, whose counts a More line carries
	timer  *time.Timer // armed while lines are held for want of room
	closed bool
}

func (r *rated) send(l status.Line) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = l
	r.flush()
	if r.held == 0 && r.room() && r.d.deliver(l) {
		r.sent = append(r.sent, r.o.Now())
		return
	}
	r.held++
	r.arm()
}

// ready sends the held count when the window has room or the deliverer is
// free again. r.mu is not held.
func (r *rated) ready() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.flush()
	r.arm()
}

// flush delivers the held count if the rate and the deliverer allow. r.mu
// is held.
func (r *rated) flush() {
	if r.held > 0 && r.room() && r.d.deliver(status.MoreLine(r.last, r.held, r.o.Now())) {
		r.sent = append(r.sent, r.o.Now())
		r.held = 0
	}
}

// arm sets the timer for when the window has room again; a busy deliverer
// calls ready itself. r.mu is held.
func (r *rated) arm() {
	if r.held > 0 && r.timer == nil && !r.closed && !r.room() {
		r.timer = time.AfterFunc(r.o.Window-r.o.Now().Sub(r.sent[0]), r.fired)
	}
}

func (r *rated) fired() {
	r.mu.Lock()
	r.timer = nil
	r.mu.Unlock()
	r.ready()
}

// room says whether a line may go now. r.mu is held.
func (r *rated) room() bool {
	now := r.o.Now()
	for len(r.sent) > 0 && now.Sub(r.sent[0]) >= r.o.Window {
		r.sent = r.sent[1:]
	}
	return len(r.sent) < r.o.Burst
}

// close sends the held count once what is in flight is done, if the rate
// allows, and logs it if not.
func (r *rated) close() {
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.d.wait()
	r.mu.Lock()
	r.flush()
	if r.held > 0 {
		r.o.Logger.Warn("notify: asks not sent at exit, over the rate", "asks", r.held)
	}
	r.mu.Unlock()
	r.d.close()
}
