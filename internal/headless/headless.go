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
	events, stopping := s.Events(), ctx.Done()
	for {
		var ev serve.Event
		select {
		case <-stopping:
			stopping, ask = nil, Leave
			continue
		case next, ok := <-events:
			if !ok {
				return nil
			}
			ev = next
		}
		if line := lineOf(ev); line != nil {
			line["at"] = time.Now().UTC().Format(time.RFC3339Nano)
			if err := writeLine(out, line); err != nil {
				return err
			}
		}
		if q, isAsk := ev.(serve.AskQueued); isAsk && ask == Deny {
			err := s.Decide(serve.Decision{Ask: q.Ask.ID, State: wire.StateDeniedWithReason, Reason: serve.NoApproverReason, Unattended: true})
			// Expired and stopped asks are reported by their own events, and
			// so is an ask another approver decided first (over a hub), or
			// one answered or withdrawn before this decision reached it.
			if err != nil && !errors.Is(err, serve.ErrExpired) && !errors.Is(err, serve.ErrStopped) &&
				!errors.Is(err, serve.ErrAlreadyDecided) && !errors.Is(err, serve.ErrUnknownAsk) {
				if werr := writeLine(out, map[string]any{"event": "error", "ask": q.Ask.ID, "error": err.Error()}); werr != nil {
					return werr
				}
			}
		}
	}
}

// writeLine prints v as one JSON line. The encoder escapes C0 controls and
// termsafe the rest (C1 controls, bidi and other format characters), so no
// untrusted string can drive or reorder the terminal.
func writeLine(out io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := out.Write(termsafe.EscapeJSON(buf.Bytes()))
	return err
}

// lineOf is the JSON line for one event; nil for events it does not print.
func lineOf(ev serve.Event) map[string]any {
	switch ev := ev.(type) {
	case serve.Arrived:
		m := askFields("arrived", ev.Ask)
		m["verdict"] = ev.Ask.Verdict.Action
		return m
	case serve.AskQueued:
		return askFields("queued", ev.Ask)
	case serve.Decided:
		m := askFields("decided", ev.Ask)
		m["state"] = ev.Response.State
		m["approved"] = ev.Response.Approved
		if ev.Response.DenialReason != "" {
			m["reason"] = ev.Response.DenialReason
		}
		if ev.Response.SessionGrantWidth != "" {
			m["sessionGrantWidth"] = ev.Response.SessionGrantWidth
		}
		m["decidedBy"] = ev.Response.DecidedBy
		m["auto"] = ev.Auto
		if ev.Replayed {
			m["replayed"] = true
		}
		m["latencyMicros"] = ev.Latency.Microseconds()
		if ev.Approver != "" {
			m["approver"] = ev.Approver
		}
		return m
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
		m := map[string]any{"event": "policy", "problems": nonNil(ev.Problems), "autoAllow": !ev.NoAutoAllow}
		if ev.NoFile != "" {
			m["noFile"] = ev.NoFile
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
		return map[string]any{"event": "skipped", "arrived": ev.Arrived, "approved": ev.Approved, "denied": ev.Denied, "expired": ev.Expired, "invalid": ev.Invalid}
	}
	return nil
}

// askFields names an ask and what it asks for. The values are the facts
// judged (accessIntent.matchValues), as in the audit log; display text is
// command-bearing and stays out of logs (decision 0028), so an ask without
// facts has none.
func askFields(event string, a serve.Ask) map[string]any {
	m := map[string]any{
		"event":   event,
		"ask":     a.ID,
		"session": a.Session,
		"id":      a.Request.ID,
		"agent":   a.Request.RequesterAgentName,
		"surface": serve.SurfaceOf(a.Request),
	}
	if ai := a.Request.AccessIntent; ai != nil {
		m["values"] = nonNil(ai.MatchValues)
	}
	if a.Host != "" {
		m["host"] = a.Host
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
