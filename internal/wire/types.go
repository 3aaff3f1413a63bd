// Package wire is pi-permission-system's forwarding protocol: the request,
// response and heartbeat records, their tolerant reader and canonical writer,
// the inbox layout, and atomic file IO. It holds no judgment.
package wire

// Source says where a forwarded ask came from. Readers treat a missing or
// unknown value as SourceToolCall.
type Source string

const (
	SourceToolCall   Source = "tool_call"
	SourceSkillInput Source = "skill_input"
	SourceSkillRead  Source = "skill_read"
)

// Request is a forwarded permission request as the tolerant reader accepted
// it (wire-protocol §4). Optional parts that were absent or malformed are nil;
// Dropped names the malformed ones so they can be reported. The tags, here
// and in the types it holds, are the wire shape MarshalRequest writes, in
// the newest child's key order.
type Request struct {
	ID                 string  `json:"id"`
	CreatedAt          float64 `json:"createdAt"` // ms since the epoch; JSON number, may be fractional
	RequesterSessionID string  `json:"requesterSessionId"`
	TargetSessionID    string  `json:"targetSessionId"`
	RequesterAgentName string  `json:"requesterAgentName"`

	Message *string  `json:"message,omitempty"` // 20.7.3 pre-rendered prompt text; display only
	Payload *Payload `json:"payload,omitempty"`
	Source  Source   `json:"source"`  // SourceToolCall when missing or invalid
	Surface *string  `json:"surface"` // display surface (tool name), not the gate surface
	Value   *string  `json:"value"`   // display value

	SessionApproval *SessionApproval `json:"sessionApproval,omitempty"`
	AccessIntent    *AccessIntent    `json:"accessIntent,omitempty"`

	// Dropped lists optional fields that were present but malformed, each
	// with the reason, in a stable order.
	Dropped []DroppedField `json:"-"`
}

// DroppedField records an optional field the reader discarded.
type DroppedField struct {
	Field  string
	Reason string
}

// AccessIntent is the set of facts the child fixed (ADR 0008). permtui uses
// it exactly as sent.
type AccessIntent struct {
	Surface       string       `json:"surface"`
	MatchValues   []string     `json:"matchValues"`
	BoundaryValue *string      `json:"boundaryValue"`
	Floor         *string      `json:"floor,omitempty"`       // sentinel such as "<indirection-bash-wrapper>"; nil when absent
	AskingUnits   []AskingUnit `json:"askingUnits,omitempty"` // nil when absent; never empty when present
	RequesterCwd  string       `json:"requesterCwd"`
	Principal     Principal    `json:"principal"`
}

// AskingUnit is one bash unit of a chain the child left at ask.
type AskingUnit struct {
	Command string  `json:"command"`
	Floor   *string `json:"floor,omitempty"`
}

// Principal says who is asking.
type Principal struct {
	SessionID string `json:"sessionId"`
	AgentName string `json:"agentName"`
}

// Grant is one whole-session approval suggestion: an allow rule on Surface for
// Pattern.
type Grant struct {
	Surface string `json:"surface"`
	Pattern string `json:"pattern"`
}

// SessionApproval is the child's "for this session" suggestion. Legacy is true
// when it arrived in the 20.3–29.x {surface, patterns} shape and was converted.
type SessionApproval struct {
	Grants []Grant
	Legacy bool
}

// Payload is the display payload of v26+ children (wire-protocol §4.5).
type Payload struct {
	Kind        string         `json:"kind"`
	Request     PayloadRequest `json:"request"`
	Evidence    []Evidence     `json:"evidence"`
	Annotations []Annotation   `json:"annotations"`
}

// PayloadRequest is the invariant core of a payload.
type PayloadRequest struct {
	Requester       PayloadRequester `json:"requester"`
	Surface         string           `json:"surface"`
	ToolName        *string          `json:"toolName"`
	InvokedToolName *string          `json:"invokedToolName"`
	Value           string           `json:"value"`
	MatchedPattern  *string          `json:"matchedPattern"`
	// MatchedSpelling (40.0.0+): the spelling of the command the child's rule
	// matched, e.g. with an absolute path argument; nil when null or absent.
	MatchedSpelling *string `json:"matchedSpelling"`
	CommandContext  *string `json:"commandContext"`
	ExecutedUnit    *string `json:"executedUnit"`
}

// PayloadRequester is who the child says asked.
type PayloadRequester struct {
	AgentName *string `json:"agentName"`
	Forwarded bool    `json:"forwarded"`
	SessionID *string `json:"sessionId"`
}

// Evidence is one labelled fact the child attached for display.
type Evidence struct {
	Label  string  `json:"label"`
	Text   string  `json:"text"`
	Detail *string `json:"detail"`
}

// Annotation is a model-generated advisory; it must be shown marked as such.
type Annotation struct {
	Source string `json:"source"`
	Text   string `json:"text"`
}

// State is a response state. StateApprovedForServingSession is internal: it
// is never written (the writer turns it into StateApproved).
type State string

const (
	StateApproved                  State = "approved"
	StateApprovedForSession        State = "approved_for_session"
	StateApprovedForServingSession State = "approved_for_serving_session"
	StateDenied                    State = "denied"
	StateDeniedWithReason          State = "denied_with_reason"
)

// GrantWidthFamily is the only sessionGrantWidth permtui ever writes.
const GrantWidthFamily = "family"

// Response is a response file (wire-protocol §5). Optional fields are omitted
// when empty, never written as null.
type Response struct {
	Approved           bool            `json:"approved"`
	State              State           `json:"state"`
	DenialReason       string          `json:"denialReason,omitempty"`
	ResponderSessionID string          `json:"responderSessionId"`
	RespondedAt        int64           `json:"respondedAt"`
	DecidedBy          *DecisionSource `json:"decidedBy,omitempty"`
	SessionGrantWidth  string          `json:"sessionGrantWidth,omitempty"`
}

// DecisionSource kinds.
const (
	DecidedByUser            = "user"
	DecidedByRule            = "rule"
	DecidedByAuthorizer      = "authorizer"
	DecidedBySessionApproval = "session_approval"
	DecidedByYolo            = "yolo"
	DecidedByInfraRead       = "infrastructure_read"
	DecidedByUnavailable     = "unavailable"
	DecidedByGateError       = "gate_error"
	DecidedByForwarded       = "forwarded"
)

// DecisionSource says what decided (wire-protocol §5.3). Only the fields of
// its Kind are meaningful; MarshalJSON writes exactly those, with nullable
// ones written as null when nil.
type DecisionSource struct {
	Kind               string
	Via                string          // user: "dialog" | "select"
	Surface            string          // rule, session_approval
	Pattern            *string         // rule, session_approval, yolo
	Origin             *string         // rule
	Name               string          // authorizer
	Verdict            string          // authorizer: "allow" | "deny"
	Reason             *string         // authorizer (nullable); unavailable, gate_error (required)
	ResponderSessionID *string         // forwarded
	Decision           *DecisionSource // forwarded (nullable)
}

// Heartbeat is the serving record <forwardingDir>/serving/<enc(id)>.json.
type Heartbeat struct {
	SessionID string `json:"sessionId"`
	PID       int    `json:"pid"`
	UpdatedAt int64  `json:"updatedAt"`
}
