// Package headless is the front end without a person: it prints the serving
// loop's events as JSON lines and, by default, denies every ask that would
// need one. It consumes the same serve events as the console (package ui).
package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// Ask policies.
const (
	Deny  = "deny"  // answer every queued ask denied_with_reason, as unavailable
	Leave = "leave" // leave queued asks for the child's timeout
)

// Server is what the headless front end needs of the serving loop
// (*serve.Server), the same events and decisions the console uses.
type Server interface {
	Events() <-chan serve.Event
	Decide(serve.Decision) error
}

// Run is the front end without a person: it prints one compact JSON line
// per event to out and, with ask Deny (the default), denies every ask that
// would need a person. It returns when the event stream ends, which is after
// the server's Run returns; once ctx is done it stops deciding but keeps
// printing, so the shutdown's own answers (decision 0041) are still
// reported.
func Run(ctx context.Context, s Server, out io.Writer, ask string) error {
	switch ask {
	case "":
		ask = Deny
	case Deny, Leave:
	default:
		return fmt.Errorf("headless: unknown ask policy %q (want %q or %q)", ask, Deny, Leave)
	}
	p := &printer{out: out}
	events := s.Events()
	for ev := range events {
		// Everything already waiting is printed with one write.
		p.at = time.Now().UTC().Format(time.RFC3339Nano)
		for ok := true; ok; {
			// Looked at per event: a batch taken before ctx ended must
			// not go on deciding after it.
			if ctx.Err() != nil {
				ask = Leave
			}
			if err := p.handle(s, ev, ask); err != nil {
				return err
			}
			if p.buf.Len() >= maxBatchBytes {
				if err := p.flush(); err != nil {
					return err
				}
			}
			select {
			case ev, ok = <-events:
			default:
				ok = false
			}
		}
		if err := p.flush(); err != nil {
			return err
		}
	}
	return nil
}

// maxBatchBytes bounds the lines held before they are written: events can
// keep coming for as long as a batch is printed (each denial waits for the
// audit's fsync while more asks arrive).
const maxBatchBytes = 64 << 10

// printer collects the lines of the events taken together.
type printer struct {
	out io.Writer
	buf bytes.Buffer
	enc *json.Encoder // into buf
	at  string        // when the batch was taken
}

// HubDenyReason is the denial of a headless approver at a hub told to deny
// (--ask=deny): the first decision made there wins, even over a person's
// console attached at the same time (decision 0213).
const HubDenyReason = "a headless approver at the hub denies every ask it is sent (--ask=deny)"

// handle prints ev and, with ask Deny, denies an ask that needs a person.
func (p *printer) handle(s Server, ev serve.Event, ask string) error {
	if line := lineOf(ev, p.at); line != nil {
		if err := p.line(line); err != nil {
			return err
		}
	}
	q, isAsk := ev.(serve.AskQueued)
	if !isAsk || ask != Deny {
		return nil
	}
	reason := serve.NoApproverReason
	if q.Ask.Host != "" {
		reason = HubDenyReason // a person's console may be attached at the hub: none is not claimed
	}
	err := s.Decide(serve.Decision{Ask: q.Ask.ID, State: wire.StateDeniedWithReason, Reason: reason, Unattended: true})
	// Expired and stopped asks are reported by their own events, and
	// so is an ask another approver decided first (over a hub), or
	// one answered or withdrawn before this decision reached it.
	if err != nil && !serve.IsExpired(err) && !errors.Is(err, serve.ErrStopped) && !errors.Is(err, serve.ErrAlreadyDecided) {
		return p.line(map[string]any{"event": "error", "ask": q.Ask.ID, "error": err.Error(), "at": p.at})
	}
	return nil
}

// line encodes v as one JSON line into the batch.
func (p *printer) line(v any) error {
	if p.enc == nil {
		p.enc = json.NewEncoder(&p.buf)
		p.enc.SetEscapeHTML(false)
	}
	return p.enc.Encode(v)
}

// flush writes the batch. The encoder escapes C0 controls and termsafe the
// rest (C1 controls, bidi and other format characters), so no untrusted
// string can drive or reorder the terminal.
func (p *printer) flush() error {
	if p.buf.Len() == 0 {
		return nil
	}
	_, err := p.out.Write(termsafe.EscapeJSON(p.buf.Bytes()))
	p.buf.Reset()
	return err
}

// askLine is the line of an ask's arrival, queueing or answer: a struct,
// not a map, because every automatic answer prints two.
type askLine struct {
	Event         string               `json:"event"`
	Ask           serve.AskID          `json:"ask"`
	Session       string               `json:"session"`
	ID            string               `json:"id"`
	Agent         string               `json:"agent"`
	Surface       string               `json:"surface"`
	Values        *[]string            `json:"values,omitempty"` // present, maybe empty, when the ask has facts
	Host          string               `json:"host,omitempty"`
	Verdict       resolve.Action       `json:"verdict,omitempty"`
	Outside       string               `json:"outsideProject,omitempty"` // the project judged with, the ask's cwd outside it (0234)
	State         wire.State           `json:"state,omitempty"`
	Approved      *bool                `json:"approved,omitempty"`
	Reason        string               `json:"reason,omitempty"`
	GrantWidth    string               `json:"sessionGrantWidth,omitempty"`
	DecidedBy     *wire.DecisionSource `json:"decidedBy,omitempty"`
	Auto          *bool                `json:"auto,omitempty"`
	Replayed      bool                 `json:"replayed,omitempty"`
	LatencyMicros *int64               `json:"latencyMicros,omitempty"`
	Approver      string               `json:"approver,omitempty"`
	At            string               `json:"at"`
}

// lineOf is the JSON line for one event at time at; nil for events it
// does not print.
func lineOf(ev serve.Event, at string) any {
	switch ev := ev.(type) {
	case serve.Arrived:
		l := askFields("arrived", ev.Ask, at)
		l.Verdict, l.Outside = ev.Ask.Verdict.Action, ev.Ask.Verdict.OutsideProject
		return l
	case serve.AskQueued:
		return askFields("queued", ev.Ask, at)
	case serve.Decided:
		l := askFields("decided", ev.Ask, at)
		latency := ev.Latency.Microseconds()
		l.State, l.Approved, l.Reason, l.GrantWidth = ev.Response.State, &ev.Response.Approved, ev.Response.DenialReason, ev.Response.SessionGrantWidth
		l.DecidedBy, l.Auto, l.Replayed, l.LatencyMicros, l.Approver = ev.Response.DecidedBy, &ev.Auto, ev.Replayed, &latency, ev.Approver
		return l
	}
	m := otherLine(ev)
	if m == nil {
		return nil // a nil map would print as null
	}
	m["at"] = at
	return m
}

// otherLine is the line of an event that is not about one ask.
func otherLine(ev serve.Event) map[string]any {
	switch ev := ev.(type) {
	case serve.Withdrawn:
		return map[string]any{"event": "withdrawn", "ask": ev.ID, "session": ev.Session, "pending": ev.Pending}
	case serve.Invalid:
		return map[string]any{"event": "invalid", "session": ev.Session, "path": ev.Path, "reason": ev.Reason}
	case serve.ServedElsewhere:
		return map[string]any{"event": "served_elsewhere", "session": ev.Session, "pid": ev.PID, "permtui": ev.Permtui}
	case serve.Forgotten:
		return map[string]any{"event": "forgotten", "session": ev.Session}
	case serve.Serving:
		return map[string]any{"event": "serving", "session": ev.Session}
	case serve.PolicyStatus:
		m := map[string]any{"event": "policy", "problems": wire.NonNil(ev.Problems), "autoAllow": !ev.NoAutoAllow}
		if ev.NoFile != "" {
			m["noFile"] = ev.NoFile
		}
		if len(ev.ProjectFiles) > 0 {
			m["project"] = map[string]any{"files": ev.ProjectFiles, "allowsHeld": ev.ProjectAllowsHeld}
		}
		return m
	case serve.WriteFailed:
		return map[string]any{"event": "write_failed", "ask": ev.Ask, "error": ev.Err}
	case serve.GrantsChanged:
		return map[string]any{"event": "grants", "grants": ev.Grants}
	case serve.DeniesChanged:
		return map[string]any{"event": "session_denies", "denies": ev.Denies}
	case serve.Degraded:
		if ev.Problem == "" {
			return map[string]any{"event": "recovered", "area": ev.Area}
		}
		return map[string]any{"event": "degraded", "area": ev.Area, "problem": ev.Problem}
	case serve.Repaired:
		return map[string]any{"event": "repaired", "area": ev.Area, "what": ev.What}
	case serve.Skipped:
		return map[string]any{"event": "skipped", "arrived": ev.Arrived, "approved": ev.Approved, "denied": ev.Denied,
			"autoApproved": ev.AutoApproved, "autoDenied": ev.AutoDenied, "unavailable": ev.Unavailable, "expired": ev.Expired, "invalid": ev.Invalid}
	}
	return nil
}

// askFields names an ask and what it asks for. The values are the facts
// judged (accessIntent.matchValues), as in the audit log; display text is
// command-bearing and stays out of logs (decision 0028), so an ask without
// facts has none.
func askFields(event string, a serve.Ask, at string) *askLine {
	l := &askLine{
		Event: event, Ask: a.ID, Session: a.Session, ID: a.Request.ID,
		Agent: a.Request.Agent(), Surface: serve.SurfaceOf(a.Request), Host: a.Host, At: at,
	}
	if ai := a.Request.AccessIntent; ai != nil {
		values := wire.NonNil(ai.MatchValues)
		l.Values = &values
	}
	return l
}
