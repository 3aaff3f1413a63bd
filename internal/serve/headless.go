package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/wire"
)

// Headless ask policies.
const (
	HeadlessDeny  = "deny"  // answer every queued ask denied_with_reason
	HeadlessLeave = "leave" // leave queued asks for the child's timeout
)

// NoApproverReason is the denial reason headless deny gives a child.
const NoApproverReason = "no approver is attached to permtui"

// RunHeadless is the front end without a person: it prints one compact JSON
// line per event to out and, with ask "deny" (the default), denies every ask
// that would need a person. It returns when the event stream ends, which is
// after Run returns; once ctx is done it stops deciding but keeps printing,
// so the shutdown's own answers (decision 0041) are still reported.
func RunHeadless(ctx context.Context, s *Server, out io.Writer, ask string) error {
	switch ask {
	case "":
		ask = HeadlessDeny
	case HeadlessDeny, HeadlessLeave:
	default:
		return fmt.Errorf("headless: unknown ask policy %q (want %q or %q)", ask, HeadlessDeny, HeadlessLeave)
	}
	events, stopping := s.Events(), ctx.Done()
	for {
		var ev Event
		select {
		case <-stopping:
			stopping, ask = nil, HeadlessLeave
			continue
		case next, ok := <-events:
			if !ok {
				return nil
			}
			ev = next
		}
		if line := headlessLine(ev); line != nil {
			if err := writeLine(out, line); err != nil {
				return err
			}
		}
		if q, isAsk := ev.(AskQueued); isAsk && ask == HeadlessDeny {
			err := s.Decide(Decision{Ask: q.Ask.ID, State: wire.StateDeniedWithReason, Reason: NoApproverReason, Unattended: true})
			// Expired and stopped asks are reported by their own events.
			if err != nil && !errors.Is(err, ErrExpired) && !errors.Is(err, ErrStopped) {
				if werr := writeLine(out, map[string]any{"event": "error", "ask": q.Ask.ID, "error": err.Error()}); werr != nil {
					return werr
				}
			}
		}
	}
}

// writeLine prints v as one JSON line. The encoder escapes every control
// character, so no untrusted string can drive the terminal.
func writeLine(out io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := out.Write(buf.Bytes())
	return err
}

func headlessLine(ev Event) map[string]any {
	switch ev := ev.(type) {
	case Arrived:
		m := askFields("arrived", ev.Ask)
		m["verdict"] = ev.Ask.Verdict.Action
		return m
	case AskQueued:
		return askFields("queued", ev.Ask)
	case Decided:
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
		m["latencyMicros"] = ev.Latency.Microseconds()
		return m
	case Withdrawn:
		return map[string]any{"event": "withdrawn", "ask": ev.ID, "session": ev.Session, "pending": ev.Pending}
	case Invalid:
		return map[string]any{"event": "invalid", "session": ev.Session, "path": ev.Path, "reason": ev.Reason}
	case ServedElsewhere:
		return map[string]any{"event": "served_elsewhere", "session": ev.Session, "pid": ev.PID}
	case Serving:
		return map[string]any{"event": "serving", "session": ev.Session}
	case PolicyStatus:
		return map[string]any{"event": "policy", "problems": nonNil(ev.Problems), "autoAllow": !ev.NoAutoAllow}
	case WriteFailed:
		return map[string]any{"event": "write_failed", "ask": ev.Ask, "error": ev.Err}
	case GrantsChanged:
		return map[string]any{"event": "grants", "grants": ev.Grants}
	case Degraded:
		if ev.Problem == "" {
			return map[string]any{"event": "recovered", "area": ev.Area}
		}
		return map[string]any{"event": "degraded", "area": ev.Area, "problem": ev.Problem}
	case Repaired:
		return map[string]any{"event": "repaired", "area": ev.Area, "what": ev.What}
	}
	return nil
}

func askFields(event string, a Ask) map[string]any {
	return map[string]any{
		"event":   event,
		"ask":     a.ID,
		"session": a.Session,
		"id":      a.Request.ID,
		"agent":   a.Request.RequesterAgentName,
		"surface": surfaceOf(a.Request),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
