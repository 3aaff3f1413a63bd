package ui

import (
	"time"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// What the console keeps after an ask is answered: text to display, clipped,
// never the request (decision 0120). A request may be 1 MiB, so any one of
// its strings may be; the log keeps up to logCap entries and the header a
// count for up to maxAgents agents, so each is bounded in bytes.

const (
	// nameBytes bounds a name kept for display (agent, surface, origin).
	nameBytes = 128
	// textBytes bounds a value, pattern, reason, choice or note kept.
	textBytes = 1024
	// logCap is how many entries the decision log keeps.
	logCap = 2000
	// maxAgents is how many agents the activity line counts by name; the
	// answers to any other agent are counted together.
	maxAgents = 64
)

// outcome is what a response said, as far as the log shows it.
type outcome struct{ approved, forSession bool }

func outcomeOf(r wire.Response) outcome {
	return outcome{approved: r.Approved, forSession: r.State == wire.StateApprovedForSession}
}

// logEntry is one entry of the decision log: a written response, or a note
// (starting with its glyph) about a rejected request, a failed write or a
// revoked grant. Every string is sanitized and clipped.
type logEntry struct {
	at      time.Time
	outcome outcome
	label   string // names the ask: agent · surface · value
	by      string // who or what decided
	choice  string // the session scope a person chose, with its grants
	reason  string
	note    string
	count   int // identical entries in a row, the latest's time kept; 0 is one
}

// same reports whether two entries say the same thing, whenever they were.
func (l logEntry) same(o logEntry) bool {
	l.at, l.count, o.at, o.count = time.Time{}, 0, time.Time{}, 0
	return l == o
}

// autoAnswer is the latest answer by policy or grant, for the activity line.
type autoAnswer struct {
	at                        time.Time
	outcome                   outcome
	agent, by, surface, value string
}

// autoCount is how many asks of one agent were answered automatically.
type autoCount struct{ approved, denied int }

func (c *autoCount) add(approved bool) {
	if approved {
		c.approved++
	} else {
		c.denied++
	}
}

// countAuto counts an automatic answer for an agent: by its name as shown
// (agentName) while fewer than maxAgents are named, else with the other
// agents. Two agents whose names clip alike share a count; they would read
// alike anyway.
func (m *Model) countAuto(name string, approved bool) {
	c := m.autoByAgent[name]
	switch {
	case c != nil:
	case len(m.autoByAgent) < maxAgents:
		c = &autoCount{}
		m.autoByAgent[name] = c
	default:
		c = &m.otherAgents
	}
	c.add(approved)
}

// decidedEntry is the log entry of a written response and, when it was
// automatic, the activity line's latest answer.
func decidedEntry(ev serve.Decided) (logEntry, autoAnswer) {
	agent, surface, value, label := askParts(ev.Ask)
	l := logEntry{outcome: outcomeOf(ev.Response), label: label,
		by: decidedBy(ev.Response.DecidedBy, ev.Auto, ev.Response.Approved), reason: termsafe.Clip(ev.Response.DenialReason, textBytes)}
	if ev.Approver != "" && !ev.Auto { // where the person answered: the approve page, a hub approver
		if ds := ev.Response.DecidedBy; ds == nil || ds.Kind == wire.DecidedByUser {
			// Another approver at the hub may have answered: the name says who, not "you".
			l.by = "a person"
		}
		l.by += " · " + termsafe.Clip(ev.Approver, nameBytes)
	}
	return l, autoAnswer{outcome: l.outcome, agent: agent, by: l.by, surface: surface, value: value}
}

// askParts names an ask by its agent, surface and the value a queue row
// shows, each sanitized and clipped, and by the three in one label; without
// a request only its number.
func askParts(a serve.Ask) (agent, surface, value, label string) {
	if a.Request == nil {
		n := "ask " + askNumber(a.ID)
		return "", "", n, n
	}
	v, _ := rawRowValue(a)
	agent, surface, value = agentName(a.Request), termsafe.Clip(serve.SurfaceOf(a.Request), nameBytes), termsafe.Blanks(termsafe.Clip(v, textBytes))
	label = agent + " · " + surface + " · " + value
	if _, child := judgedValue(a); child != "" {
		label += " (the child's label: " + termsafe.Blanks(termsafe.Clip(child, textBytes)) + ")"
	}
	return agent, surface, value, label
}
