// Package status is permtui seen from away: which agents are blocked on a
// person, how many asks wait per session and agent, and decisions by kind.
// A Tracker turns serve's events into Lines that carry no command text,
// value, path or reason unless full detail is asked for, and into a
// one-line summary for a status bar (decision 0181).
package status

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// Detail says how much of an ask leaves the process.
type Detail string

const (
	// Counts (the default): who is blocked and the counts; never the
	// command, value, paths or reasons.
	Counts Detail = "counts"
	// Full adds the ask's value, working directory, why it asks and the
	// denial reason.
	Full Detail = "full"
)

// ParseDetail reads a --detail flag.
func ParseDetail(s string) (Detail, error) {
	switch Detail(s) {
	case Counts, Full:
		return Detail(s), nil
	}
	return "", fmt.Errorf("--detail must be %s or %s, not %q", Counts, Full, s)
}

// Kinds of Line.
const (
	Blocked   = "blocked"   // an ask now waits for a person
	Unblocked = "unblocked" // a waiting ask was answered or withdrawn
	Answered  = "decided"   // an ask nobody was waiting on was answered
	Counted   = "counted"   // answers a stalled subscriber was sent as counts
	Expiring  = "expiring"  // an ask still waits, near the child's timeout (notify)
	More      = "more"      // asks over a notifier's rate or capacity, counted (notify)
	Stopped   = "stopped"   // serving stopped; the counts as it stopped
)

// Outcomes, the keys of Decisions.
const (
	Approved     = "approved"
	Denied       = "denied"
	AutoApproved = "auto_approved"
	AutoDenied   = "auto_denied"
	Expired      = "expired"
	// Unavailable: denied with no person deciding (decidedBy unavailable):
	// nobody attached, permtui stopping, a hub decision a relay could not
	// use (decision 0193).
	Unavailable = "unavailable"
)

// Line is one change, as JSON.
type Line struct {
	Event   string      `json:"event"`
	At      string      `json:"at"`
	Ask     serve.AskID `json:"ask,omitempty"`
	Session string      `json:"session,omitempty"`
	Host    string      `json:"host,omitempty"`
	Agent   string      `json:"agent,omitempty"`
	Surface string      `json:"surface,omitempty"`
	Outcome string      `json:"outcome,omitempty"`
	// Waiting is the number of asks waiting for a person after this change.
	Waiting   int            `json:"waiting"`
	BySession map[string]int `json:"bySession"`
	ByAgent   map[string]int `json:"byAgent"`
	// Decisions counts the answers since start, by outcome.
	Decisions map[string]int `json:"decisions"`
	// More is how many asks a More line counts.
	More int `json:"more,omitempty"`
	// Link is the ask's approve page, on notifications when it is served.
	Link string `json:"link,omitempty"`
	// Full detail only.
	Value  *string `json:"value,omitempty"`
	Cwd    string  `json:"cwd,omitempty"`
	Why    string  `json:"why,omitempty"`
	Reason string  `json:"reason,omitempty"`
}

// Tracker keeps the waiting asks and the decision counts. It is not safe
// for concurrent use: one subscriber's goroutine owns it.
type Tracker struct {
	detail    Detail
	waiting   map[serve.AskID]serve.Ask
	decisions map[string]int
}

// NewTracker starts with nothing waiting.
func NewTracker(d Detail) *Tracker {
	return &Tracker{detail: d, waiting: map[serve.AskID]serve.Ask{}, decisions: map[string]int{}}
}

// Apply takes one event; ok is false for events that change nothing here.
func (t *Tracker) Apply(ev serve.Event, at time.Time) (l Line, ok bool) {
	switch ev := ev.(type) {
	case serve.AskQueued:
		t.waiting[ev.Ask.ID] = ev.Ask
		return t.line(Blocked, ev.Ask, "", at), true
	case serve.Decided:
		outcome := outcomeOf(ev)
		t.decisions[outcome]++
		kind := Answered
		if _, was := t.waiting[ev.Ask.ID]; was {
			kind = Unblocked
			delete(t.waiting, ev.Ask.ID)
		}
		l := t.line(kind, ev.Ask, outcome, at)
		if t.detail == Full {
			l.Reason = text(ev.Response.DenialReason)
		}
		return l, true
	case serve.Withdrawn:
		a, was := t.waiting[ev.ID]
		if !was {
			return Line{}, false
		}
		delete(t.waiting, ev.ID)
		t.decisions[Expired]++
		return t.line(Unblocked, a, Expired, at), true
	case serve.Skipped:
		t.decisions[Approved] += ev.Approved
		t.decisions[Denied] += ev.Denied
		t.decisions[AutoApproved] += ev.AutoApproved
		t.decisions[AutoDenied] += ev.AutoDenied
		t.decisions[Expired] += ev.Expired
		t.decisions[Unavailable] += ev.Unavailable
		return t.line(Counted, serve.Ask{}, "", at), true
	}
	return Line{}, false
}

// Reminder is the Expiring line of an ask still waiting; ok is false once
// it no longer waits.
func (t *Tracker) Reminder(id serve.AskID, at time.Time) (Line, bool) {
	a, ok := t.waiting[id]
	if !ok {
		return Line{}, false
	}
	return t.line(Expiring, a, "", at), true
}

// MoreLine counts n asks not notified one by one, with the counts of the
// latest line.
func MoreLine(last Line, n int, at time.Time) Line {
	return Line{Event: More, At: stamp(at), More: n, Waiting: last.Waiting,
		BySession: last.BySession, ByAgent: last.ByAgent, Decisions: last.Decisions}
}

func stamp(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }

func outcomeOf(ev serve.Decided) string {
	switch {
	case ev.Auto && ev.Response.Approved:
		return AutoApproved
	case ev.Auto:
		return AutoDenied
	case ev.Response.DecidedBy != nil && ev.Response.DecidedBy.Kind == wire.DecidedByUnavailable:
		return Unavailable
	case ev.Response.Approved:
		return Approved
	}
	return Denied
}

func (t *Tracker) line(kind string, a serve.Ask, outcome string, at time.Time) Line {
	l := Line{
		Event: kind, At: stamp(at), Ask: a.ID, Session: name(a.Session), Host: name(a.Host), Outcome: outcome,
		Waiting: len(t.waiting), BySession: map[string]int{}, ByAgent: map[string]int{}, Decisions: maps.Clone(t.decisions),
	}
	if r := a.Request; r != nil {
		l.Agent = name(r.Agent())
		l.Surface = name(a.Verdict.Surface)
		if t.detail == Full {
			l.Why = text(a.Verdict.Explanation)
			if r.Value != nil {
				l.Value = new(text(*r.Value))
			}
			if r.AccessIntent != nil {
				l.Cwd = text(r.AccessIntent.RequesterCwd)
			}
		}
	}
	for _, w := range t.waiting {
		l.BySession[name(w.Session)]++
		l.ByAgent[name(agentOf(w))]++
	}
	return l
}

// What a child supplies leaves every away output (lines, notifications,
// logs) with stand-ins for what a terminal or a phone would act on, and
// clipped: a name to about nameLimit bytes, a value, path or reason to
// about textLimit (decision 0185).
const (
	nameLimit = 64
	textLimit = 1000
)

func name(s string) string { return termsafe.Clip(s, nameLimit) }
func text(s string) string { return termsafe.Clip(s, textLimit) }

func agentOf(a serve.Ask) string {
	if a.Request == nil || a.Request.Agent() == "" {
		return "?"
	}
	return a.Request.Agent()
}

// shownAgents is how many agents the summary names before "+N".
const shownAgents = 3

// Summary is the status-bar line: empty when nothing waits, else for
// example "⏸ 3 waiting · builder 2 · scout 1". Agent names are cut to
// letters, digits, '-', '_' and '.', so a name cannot inject a status-bar
// format or a terminal escape.
func (t *Tracker) Summary() string {
	if len(t.waiting) == 0 {
		return ""
	}
	counts := map[string]int{}
	for _, a := range t.waiting {
		counts[plainName(agentOf(a))]++
	}
	names := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(counts[b]-counts[a], strings.Compare(a, b))
	})
	var b strings.Builder
	fmt.Fprintf(&b, "⏸ %d waiting", len(t.waiting))
	for i, n := range names {
		if i == shownAgents {
			fmt.Fprintf(&b, " · +%d", len(names)-i)
			break
		}
		fmt.Fprintf(&b, " · %s %d", n, counts[n])
	}
	return b.String()
}

// plainName keeps a name's plain characters, at most 24 of them.
func plainName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() == 24 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}
