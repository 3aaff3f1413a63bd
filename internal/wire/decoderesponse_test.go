package wire

import (
	"errors"
	"fmt"
	"math"

	"github.com/permtui/permtui/internal/jsonparse"
)

// permtui never reads a response as a strict reader; the conformance
// vectors and the fuzz target still check that what it writes decodes.

var responseKeys = map[string]bool{
	"approved": true, "state": true, "denialReason": true, "responderSessionId": true,
	"respondedAt": true, "decidedBy": true, "sessionGrantWidth": true,
}

// DecodeResponse reads a response file strictly, as one our writer could
// have produced: all five core fields with their exact types, optional
// fields absent rather than null, no unknown keys, and decidedBy well-formed.
// It does not check the writer invariants; see ValidateResponse.
func DecodeResponse(data []byte) (Response, error) {
	var r Response
	v, err := decodeJSON(data)
	if err != nil {
		return r, err
	}
	o, ok := asObject(v)
	if !ok {
		return r, errors.New("not a JSON object")
	}
	for _, m := range o.Members() {
		if !responseKeys[m.Key] {
			return r, fmt.Errorf("unknown key %q", m.Key)
		}
		if m.Value.Kind == jsonparse.Null {
			return r, fmt.Errorf("%s is null", m.Key)
		}
	}
	var state string
	if r.Approved, ok = asBool(o.Get("approved")); !ok {
		return r, errors.New("approved is not a boolean")
	}
	if state, ok = asString(o.Get("state")); !ok {
		return r, errors.New("state is not a string")
	}
	r.State = State(state)
	if r.ResponderSessionID, ok = asString(o.Get("responderSessionId")); !ok {
		return r, errors.New("responderSessionId is not a string")
	}
	if r.RespondedAt, ok = asInt64(o.Get("respondedAt")); !ok {
		return r, errors.New("respondedAt is not an integer")
	}
	if v := o.Get("denialReason"); present(v) {
		if r.DenialReason, ok = asString(v); !ok {
			return r, errors.New("denialReason is not a string")
		}
	}
	if v := o.Get("sessionGrantWidth"); present(v) {
		if r.SessionGrantWidth, ok = asString(v); !ok {
			return r, errors.New("sessionGrantWidth is not a string")
		}
	}
	if v := o.Get("decidedBy"); present(v) {
		if r.DecidedBy, err = readDecision(v, 0); err != nil {
			return r, fmt.Errorf("decidedBy: %w", err)
		}
	}
	return r, nil
}

// asInt64 reads a JSON number that is an integer within int64 range.
func asInt64(v jsonparse.Value) (int64, bool) {
	f, ok := asFloat(v)
	if !ok || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}
