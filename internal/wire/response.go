package wire

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/permtui/permtui/internal/jsonparse"
)

func knownState(s State) bool {
	switch s {
	case StateApproved, StateApprovedForSession, StateApprovedForServingSession, StateDenied, StateDeniedWithReason:
		return true
	}
	return false
}

// TrimReason trims like JavaScript's String.prototype.trim, which is how pi
// trims a denial reason.
func TrimReason(s string) string {
	return strings.TrimFunc(s, IsJSSpace)
}

// IsJSSpace is JavaScript's WhiteSpace and LineTerminator set, which
// String.prototype.trim removes (it differs from unicode.IsSpace on U+0085
// and U+FEFF).
func IsJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return '\u2000' <= r && r <= '\u200a'
}

// ValidateResponse checks the writer invariants (§5.2, vectors/README
// writerValid). It also refuses what the child could not read or what no
// serving node writes, so a response that passes is always readable.
func ValidateResponse(r Response) error {
	switch r.State {
	case StateApproved, StateApprovedForSession:
		if !r.Approved {
			return fmt.Errorf("state %s needs approved true", r.State)
		}
	case StateDenied, StateDeniedWithReason:
		if r.Approved {
			return fmt.Errorf("state %s needs approved false", r.State)
		}
	case StateApprovedForServingSession:
		return errors.New("approved_for_serving_session is internal; write approved")
	default:
		return fmt.Errorf("unknown state %q", r.State)
	}
	if r.State == StateDeniedWithReason {
		if r.DenialReason == "" || r.DenialReason != TrimReason(r.DenialReason) {
			return errors.New("denied_with_reason needs a trimmed, non-empty denialReason (a blank one means plain denied)")
		}
	} else if r.DenialReason != "" {
		return errors.New("denialReason is only for denied_with_reason")
	}
	if r.SessionGrantWidth != "" && (r.SessionGrantWidth != GrantWidthFamily || r.State != StateApprovedForSession) {
		return errors.New(`sessionGrantWidth may only be "family", with approved_for_session`)
	}
	if id, ok := NormalizeSessionID(r.ResponderSessionID); !ok || id != r.ResponderSessionID {
		return fmt.Errorf("responderSessionId %q is not a normalized session id", r.ResponderSessionID)
	}
	if r.RespondedAt <= 0 {
		return errors.New("respondedAt must be a positive ms timestamp")
	}
	if r.DecidedBy != nil {
		if err := checkWritableDecision(r.DecidedBy); err != nil {
			return fmt.Errorf("decidedBy: %w", err)
		}
	}
	return nil
}

// MarshalResponse validates r and encodes it as pi does: compact JSON in the
// key order approved, state, [denialReason], responderSessionId, respondedAt,
// [decidedBy], [sessionGrantWidth]; absent optionals omitted; no HTML
// escaping, trailing newline or BOM.
func MarshalResponse(r Response) ([]byte, error) {
	if err := ValidateResponse(r); err != nil {
		return nil, fmt.Errorf("invalid response: %w", err)
	}
	return marshalCompact(r)
}

// DecidedBy statuses of a ChildResponse.
const (
	DecidedByKept    = "kept"
	DecidedByDropped = "dropped"
	DecidedByAbsent  = "absent"
)

// GrantWidthProven is the default width a child records for
// approved_for_session; it is never written.
const GrantWidthProven = "proven"

// ChildResponse is a response as the newest child reads it.
type ChildResponse struct {
	Approved        bool // the only field the child's gate acts on
	State           State
	DenialReason    string          // "" when absent or not a string
	DecidedBy       *DecisionSource // nil if absent or dropped
	DecidedByStatus string          // DecidedByKept, DecidedByDropped or DecidedByAbsent
	GrantWidth      string          // GrantWidthFamily only when sessionGrantWidth is exactly "family"
	RespondedAt     int64           // the read time when missing or not a usable number
}

// ErrUnreadableResponse is what ReadResponseAsChild returns, wrapped, when
// the child would treat the file as unreadable (and deny).
var ErrUnreadableResponse = errors.New("unreadable response")

// ReadResponseAsChild reads a response exactly as the newest child does
// (§5.2, §5.3): it needs a boolean approved, one of the five states and a
// string responderSessionId; everything else is tolerated.
func ReadResponseAsChild(data []byte) (*ChildResponse, error) {
	unreadable := func(why string) error { return fmt.Errorf("%w: %s", ErrUnreadableResponse, why) }
	v, err := decodeJSON(data)
	if err != nil {
		return nil, unreadable(err.Error())
	}
	o, ok := asObject(v)
	if !ok {
		return nil, unreadable("not a JSON object")
	}
	c := &ChildResponse{GrantWidth: GrantWidthProven}
	if c.Approved, ok = asBool(o.Get("approved")); !ok {
		return nil, unreadable("approved is not a boolean")
	}
	state, _ := asString(o.Get("state"))
	if c.State = State(state); !knownState(c.State) {
		return nil, unreadable("state is not one of the five states")
	}
	if _, ok := asString(o.Get("responderSessionId")); !ok {
		return nil, unreadable("responderSessionId is not a string")
	}
	c.DenialReason, _ = asString(o.Get("denialReason"))
	if c.RespondedAt, ok = asInt64Truncated(o.Get("respondedAt")); !ok {
		c.RespondedAt = time.Now().UnixMilli()
	}
	c.DecidedByStatus = DecidedByAbsent
	if v := o.Get("decidedBy"); present(v) {
		c.DecidedByStatus = DecidedByDropped
		if d, err := readDecision(v, 0); err == nil {
			c.DecidedBy, c.DecidedByStatus = d, DecidedByKept
		}
	}
	if w, _ := asString(o.Get("sessionGrantWidth")); w == GrantWidthFamily {
		c.GrantWidth = GrantWidthFamily
	}
	return c, nil
}

// asInt64Truncated reads any finite JSON number within int64 range,
// dropping a fraction.
func asInt64Truncated(v jsonparse.Value) (int64, bool) {
	f, ok := asFloat(v)
	if !ok || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}
