// Package notify tells a person away from the console that an ask waits:
// a command of theirs gets each new ask (and each ask about to expire) as
// a JSON line on stdin, and an ntfy topic gets a push with a button to the
// approve page. Neither may delay serving: sends are bounded, timed and
// logged, never queued without end, and coalesced beyond a rate into one
// count (decisions 0182, 0184).
package notify

import (
	"cmp"
	"log/slog"
	"net/http"
	"time"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/status"
)

// TokenEnv names the variable the ntfy token is read from; commands never
// see it.
const TokenEnv = "PERMTUI_NTFY_TOKEN"

// Defaults for Options left zero.
const (
	// DefaultExpiring reminds a minute before a child's default ten-minute
	// wait ends (a child may be configured to wait less; its deadline is
	// not on the wire).
	DefaultExpiring = 9 * time.Minute
	DefaultTimeout  = 10 * time.Second
	DefaultParallel = 4
	DefaultBurst    = 5
	DefaultWindow   = time.Minute
)

// Options choose the notifiers; at least one of Command and Ntfy.
type Options struct {
	Detail status.Detail
	// Command is run with /bin/sh -c for each new and expiring ask, the
	// Line as JSON on stdin.
	Command string
	// Ntfy is a topic URL (https://ntfy.sh/mytopic or a self-hosted one).
	Ntfy string
	// NtfyToken, when set, is sent as a bearer token.
	NtfyToken string
	// Link gives the approve page's link for an ask ("" for none).
	Link func(serve.AskID) string

	Expiring time.Duration // after queueing, a still-waiting ask is reminded
	Timeout  time.Duration // a command is killed, a post given up after this
	Parallel int           // commands running at once; more are counted
	// At most Burst notifications per Window from each notifier; the asks
	// beyond are counted and sent as one when the window allows.
	Burst  int
	Window time.Duration

	Logger *slog.Logger
	Client *http.Client
	Now    func() time.Time
}

func (o *Options) defaults() {
	o.Expiring = orDefault(o.Expiring, DefaultExpiring)
	o.Timeout = orDefault(o.Timeout, DefaultTimeout)
	o.Window = orDefault(o.Window, DefaultWindow)
	o.Parallel = orDefault(o.Parallel, DefaultParallel)
	o.Burst = orDefault(o.Burst, DefaultBurst)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	o.Client = cmp.Or(o.Client, &http.Client{})
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Link == nil {
		o.Link = func(serve.AskID) string { return "" }
	}
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Check refuses options Run cannot use, before serving starts.
func Check(o Options) error {
	if o.Ntfy == "" {
		return nil
	}
	_, _, err := ntfyTopic(o.Ntfy)
	return err
}

// Run follows one subscription until it closes, then waits for the sends
// in flight (each bounded by Timeout).
func Run(events <-chan serve.Event, o Options) {
	o.defaults()
	var sinks []*rated
	// Each deliverer calls its rate's ready.
	if o.Command != "" {
		r := &rated{o: o}
		r.d = newCommand(o, r.ready)
		sinks = append(sinks, r)
	}
	if o.Ntfy != "" {
		r := &rated{o: o}
		if n, err := newNtfy(o, r.ready); err != nil {
			o.Logger.Error("ntfy not used", "err", err) // Check refuses it before serving
		} else {
			r.d = n
			sinks = append(sinks, r)
		}
	}
	t := status.NewTracker(o.Detail)
	rs := newReminders(o.Expiring)
	notify := func(l status.Line) {
		l.Link = o.Link(l.Ask)
		for _, s := range sinks {
			s.send(l)
		}
	}
	for events != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			l, changed := t.Apply(ev, o.Now())
			switch {
			case !changed:
			case l.Event == status.Blocked:
				notify(l)
				rs.arm(l.Ask)
			case l.Event == status.Unblocked:
				rs.cancel(l.Ask)
			}
		case r := <-rs.due:
			if !rs.take(r) {
				continue
			}
			if l, waiting := t.Reminder(r.id, o.Now()); waiting {
				notify(l)
			}
		}
	}
	rs.stop()
	for _, s := range sinks {
		s.close()
	}
}
