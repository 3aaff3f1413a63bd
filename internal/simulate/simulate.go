// Package simulate replays the asks recorded in permtui's audit log against
// the policy as it is and against a candidate policy, so a person (or CI)
// sees what a rule change would have decided before it is written.
package simulate

import (
	"fmt"
	"time"

	"github.com/permtui/permtui/internal/judgment"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// Log is the replayable part of an audit log.
type Log struct {
	Asks    []serve.AuditRecord // decisions with facts, oldest first
	NoFacts int                 // decisions without facts (no accessIntent, or written before permtui kept them)
	Bad     int                 // lines that did not parse
}

// ReadLog reads the audit log at path, keeping decisions made at or after
// since (zero: all). A missing log is an empty one.
func ReadLog(path string, since time.Time) (Log, error) {
	var l Log
	cut := since.UnixMilli()
	var err error
	l.Bad, err = serve.ReadAudit(path, func(r serve.AuditRecord) {
		switch {
		case !since.IsZero() && r.DecidedAt < cut:
		case r.Facts == nil:
			l.NoFacts++
		default:
			l.Asks = append(l.Asks, r)
		}
	})
	return l, err
}

// Counts is how many asks a policy answers each way.
type Counts struct {
	Allow int `json:"allow"`
	Deny  int `json:"deny"`
	Ask   int `json:"ask"`
}

func (c *Counts) add(a resolve.Action) {
	switch a {
	case resolve.Allow:
		c.Allow++
	case resolve.Deny:
		c.Deny++
	default:
		c.Ask++
	}
}

// Outcome is one recorded ask judged by both policies.
type Outcome struct {
	Record        serve.AuditRecord
	Before, After resolve.Verdict
	// A person answered it (not a rule, grant or shutdown), and how.
	PersonDenied, PersonApproved bool
}

// Report is a replay of a log under the current and the candidate policy.
type Report struct {
	Replayed  int
	NoFacts   int
	Bad       int
	Current   Counts
	Candidate Counts
	Outcomes  []Outcome // every replayed ask, in log order
}

// Replay judges every ask of l under both policies as serve judges asks
// (judgment.Verdict). Session grants and denies are left out: they belong to
// one served session, and the question is what the written policy decides.
func Replay(l Log, current, candidate *resolve.Policy) Report {
	rep := Report{Replayed: len(l.Asks), NoFacts: l.NoFacts, Bad: l.Bad}
	for _, r := range l.Asks {
		f := r.Facts
		req := judgment.FactsRequest(resolve.Query{Agent: f.Principal, Surface: f.Surface, Values: f.MatchValues, Floor: f.Floor, AskingUnits: f.AskingUnits})
		o := Outcome{Record: r, Before: judgment.Verdict(current, req, nil, nil), After: judgment.Verdict(candidate, req, nil, nil)}
		person := r.DecidedBy != nil && r.DecidedBy.Kind == wire.DecidedByUser
		o.PersonDenied = person && !r.Approved
		o.PersonApproved = person && r.Approved
		rep.Current.add(o.Before.Action)
		rep.Candidate.add(o.After.Action)
		rep.Outcomes = append(rep.Outcomes, o)
	}
	return rep
}

// Changed lists the asks whose answer differs between the two policies.
func (r Report) Changed() []Outcome {
	return filter(r.Outcomes, func(o Outcome) bool { return o.Before.Action != o.After.Action })
}

// DeniedNowAllowed lists the asks a person denied that the candidate allows.
func (r Report) DeniedNowAllowed() []Outcome {
	return filter(r.Outcomes, func(o Outcome) bool { return o.PersonDenied && o.After.Action == resolve.Allow })
}

// filter is the outcomes keep accepts, in order (nil for none).
func filter(outcomes []Outcome, keep func(Outcome) bool) []Outcome {
	var out []Outcome
	for _, o := range outcomes {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// Coverage is what a new rule would have decided among the recorded asks.
type Coverage struct {
	Replayed int
	Decided  []Outcome // decided by the new rule under the candidate
	Denied   []Outcome // of those, the ones a person denied
}

// CoverageOf is the coverage of the rule match accepts: the asks the
// candidate decides with it.
func (r Report) CoverageOf(match func(*resolve.RuleRef) bool) Coverage {
	decided := func(o Outcome) bool { return o.After.Rule != nil && match(o.After.Rule) }
	c := Coverage{Replayed: r.Replayed, Decided: filter(r.Outcomes, decided)}
	c.Denied = filter(c.Decided, func(o Outcome) bool { return o.PersonDenied })
	return c
}

// Summary says it in one line, e.g. "would have decided 37 of the last 412
// asks; 2 of them a person denied".
func (c Coverage) Summary() string {
	s := fmt.Sprintf("would have decided %d of the last %d recorded asks", len(c.Decided), c.Replayed)
	if len(c.Denied) > 0 {
		s += fmt.Sprintf("; %d of them a person denied", len(c.Denied))
	}
	return s
}
