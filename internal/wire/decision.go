package wire

import (
	"errors"
	"fmt"

	"github.com/permtui/permtui/internal/jsonparse"
)

// maxForwardedDepth is how many nested "forwarded" hops a reader accepts.
const maxForwardedDepth = 4

// UserDecision is the decider of a human answer: {"kind":"user","via":"dialog"}.
func UserDecision() *DecisionSource {
	return &DecisionSource{Kind: DecidedByUser, Via: "dialog"}
}

// RuleDecision is the decider of recorded policy; pattern and origin may be nil.
func RuleDecision(surface string, pattern, origin *string) *DecisionSource {
	return &DecisionSource{Kind: DecidedByRule, Surface: surface, Pattern: pattern, Origin: origin}
}

// UnavailableDecision says no authority ruled, e.g. permtui shutting down.
func UnavailableDecision(reason string) *DecisionSource {
	return &DecisionSource{Kind: DecidedByUnavailable, Reason: &reason}
}

// Wire shapes of each kind, in pi's key order; nullable fields are written
// as null.
type (
	userJSON struct {
		Kind string `json:"kind"`
		Via  string `json:"via"`
	}
	ruleJSON struct {
		Kind    string  `json:"kind"`
		Surface string  `json:"surface"`
		Pattern *string `json:"pattern"`
		Origin  *string `json:"origin"`
	}
	authorizerJSON struct {
		Kind    string  `json:"kind"`
		Name    string  `json:"name"`
		Verdict string  `json:"verdict"`
		Reason  *string `json:"reason"`
	}
	sessionApprovalJSON struct {
		Kind    string  `json:"kind"`
		Surface string  `json:"surface"`
		Pattern *string `json:"pattern"`
	}
	yoloJSON struct {
		Kind    string  `json:"kind"`
		Pattern *string `json:"pattern"`
	}
	kindOnlyJSON struct {
		Kind string `json:"kind"`
	}
	reasonJSON struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	}
	forwardedJSON struct {
		Kind               string          `json:"kind"`
		ResponderSessionID *string         `json:"responderSessionId"`
		Decision           *DecisionSource `json:"decision"`
	}
)

// MarshalJSON writes only the fields of d's kind, in pi's order.
func (d DecisionSource) MarshalJSON() ([]byte, error) {
	var v any
	switch d.Kind {
	case DecidedByUser:
		v = userJSON{d.Kind, d.Via}
	case DecidedByRule:
		v = ruleJSON{d.Kind, d.Surface, d.Pattern, d.Origin}
	case DecidedByAuthorizer:
		v = authorizerJSON{d.Kind, d.Name, d.Verdict, d.Reason}
	case DecidedBySessionApproval:
		v = sessionApprovalJSON{d.Kind, d.Surface, d.Pattern}
	case DecidedByYolo:
		v = yoloJSON{d.Kind, d.Pattern}
	case DecidedByInfraRead:
		v = kindOnlyJSON{d.Kind}
	case DecidedByUnavailable, DecidedByGateError:
		if d.Reason == nil {
			return nil, fmt.Errorf("decidedBy %s needs a reason", d.Kind)
		}
		v = reasonJSON{d.Kind, *d.Reason}
	case DecidedByForwarded:
		v = forwardedJSON{d.Kind, d.ResponderSessionID, d.Decision}
	default:
		return nil, fmt.Errorf("unknown decidedBy kind %q", d.Kind)
	}
	return marshalCompact(v)
}

// readDecision validates a decidedBy value as the newest child does (§5.3):
// any malformed field at any depth, or more than four forwarded hops, drops
// the whole value. Unknown keys are ignored.
func readDecision(v jsonparse.Value, hops int) (*DecisionSource, error) {
	o, ok := asObject(v)
	if !ok {
		return nil, errors.New("not an object")
	}
	kind, _ := asString(o.Get("kind"))
	d := &DecisionSource{Kind: kind}
	bad := func(field string) error { return fmt.Errorf("%s decider has a bad %s", kind, field) }
	switch kind {
	case DecidedByUser:
		if d.Via, _ = asString(o.Get("via")); d.Via != "dialog" && d.Via != "select" {
			return nil, bad("via")
		}
	case DecidedByRule, DecidedBySessionApproval:
		if d.Surface, ok = asString(o.Get("surface")); !ok {
			return nil, bad("surface")
		}
		if d.Pattern, ok = asNullableString(o.Get("pattern")); !ok {
			return nil, bad("pattern")
		}
		if kind == DecidedByRule {
			if d.Origin, ok = asNullableString(o.Get("origin")); !ok {
				return nil, bad("origin")
			}
		}
	case DecidedByAuthorizer:
		if d.Name, ok = asString(o.Get("name")); !ok {
			return nil, bad("name")
		}
		if d.Verdict, _ = asString(o.Get("verdict")); d.Verdict != "allow" && d.Verdict != "deny" {
			return nil, bad("verdict")
		}
		if d.Reason, ok = asNullableString(o.Get("reason")); !ok {
			return nil, bad("reason")
		}
	case DecidedByYolo:
		if d.Pattern, ok = asNullableString(o.Get("pattern")); !ok {
			return nil, bad("pattern")
		}
	case DecidedByInfraRead:
	case DecidedByUnavailable, DecidedByGateError:
		reason, ok := asString(o.Get("reason"))
		if !ok {
			return nil, bad("reason")
		}
		d.Reason = &reason
	case DecidedByForwarded:
		if hops >= maxForwardedDepth {
			return nil, fmt.Errorf("more than %d forwarded hops", maxForwardedDepth)
		}
		if d.ResponderSessionID, ok = asNullableString(o.Get("responderSessionId")); !ok {
			return nil, bad("responderSessionId")
		}
		inner := o.Get("decision")
		if !present(inner) {
			return nil, bad("decision")
		}
		if inner.Kind != jsonparse.Null {
			dec, err := readDecision(inner, hops+1)
			if err != nil {
				return nil, err
			}
			d.Decision = dec
		}
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	return d, nil
}

// checkWritableDecision accepts only the kinds a serving node writes, with
// exactly their fields set.
func checkWritableDecision(d *DecisionSource) error {
	var want DecisionSource
	switch d.Kind {
	case DecidedByUser:
		if d.Via != "dialog" && d.Via != "select" {
			return errors.New("user decider needs via dialog or select")
		}
		want = DecisionSource{Kind: d.Kind, Via: d.Via}
	case DecidedByRule:
		// The surface is accessIntent.surface, which may be "" (§4.4); the
		// child reads any string.
		want = DecisionSource{Kind: d.Kind, Surface: d.Surface, Pattern: d.Pattern, Origin: d.Origin}
	case DecidedByAuthorizer:
		if d.Name == "" || d.Verdict != "allow" && d.Verdict != "deny" {
			return errors.New("authorizer decider needs a name and verdict allow or deny")
		}
		want = DecisionSource{Kind: d.Kind, Name: d.Name, Verdict: d.Verdict, Reason: d.Reason}
	case DecidedByUnavailable, DecidedByGateError:
		if d.Reason == nil {
			return fmt.Errorf("%s decider needs a reason", d.Kind)
		}
		want = DecisionSource{Kind: d.Kind, Reason: d.Reason}
	default:
		return fmt.Errorf("a serving node does not write decidedBy kind %q", d.Kind)
	}
	if *d != want {
		return fmt.Errorf("%s decider has fields of another kind", d.Kind)
	}
	return nil
}
