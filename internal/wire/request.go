package wire

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/permtui/permtui/internal/jsonparse"
)

// MaxFileSize caps every inbox file permtui reads (our policy; pi has no cap).
const MaxFileSize = 1 << 20

// RejectError says a request must be deleted without an answer (§4.4): bad
// JSON, a missing or mistyped core field, an unsafe id, or an oversized file.
type RejectError struct{ Reason string }

func (e *RejectError) Error() string { return "request rejected: " + e.Reason }

func reject(format string, args ...any) error {
	return &RejectError{Reason: fmt.Sprintf(format, args...)}
}

// QuoteShort quotes an untrusted string for a message: escaped, and cut
// after 80 bytes so a hostile file cannot flood logs and events.
func QuoteShort(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}

// MaxIDLength bounds a request id so that responses/<id>.json and its temp
// name <id>.json.<pid>.<ms>.<n>.tmp fit in a 255-byte file name; a longer id
// could never be answered. pi's ids are about 30 bytes.
const MaxIDLength = 200

// ValidID reports whether a request id is safe as a file name: it matches
// ^[A-Za-z0-9._-]+$, is not "." or "..", and is at most MaxIDLength bytes.
func ValidID(id string) bool {
	return id != "" && id != "." && id != ".." && len(id) <= MaxIDLength &&
		strings.Trim(id, alphanumeric+"._-") == ""
}

// NormalizeSessionID trims a session id as JavaScript's trim does (U+FEFF
// is whitespace, U+0085 is not); false means "no id": empty or "unknown" in
// any case (§2.3). "." and ".." also count as no id (our
// policy), since their session directory would leave sessions/.
func NormalizeSessionID(s string) (string, bool) {
	s = TrimReason(s)
	if s == "" || strings.EqualFold(s, "unknown") || s == "." || s == ".." {
		return "", false
	}
	return s, true
}

// RoutedTo reports whether the request targets servedID: both normalize to
// the same real id.
func (r *Request) RoutedTo(servedID string) bool {
	target, ok := NormalizeSessionID(r.TargetSessionID)
	if !ok {
		return false
	}
	served, ok := NormalizeSessionID(servedID)
	return ok && target == served
}

// Agent is the agent the request speaks for: the facts' principal, or
// without facts the child's own word (requesterAgentName).
func (r *Request) Agent() string {
	if r.AccessIntent != nil {
		return r.AccessIntent.Principal.AgentName
	}
	return r.RequesterAgentName
}

// ParseRequest reads a request file with the newest pi reader's tolerance
// (§4.4, §4.5), plus our policies: an id that is not ValidID and a file over
// MaxFileSize are rejected, and a legacy sessionApproval is converted to
// grants. The error, if any, is a *RejectError. Routing is not checked here
// (see RoutedTo).
func ParseRequest(data []byte) (*Request, error) {
	if len(data) > MaxFileSize {
		return nil, reject("file is %d bytes, over the %d-byte cap", len(data), MaxFileSize)
	}
	v, err := decodeJSON(data)
	if err != nil {
		return nil, reject("%v", err)
	}
	o, ok := asObject(v)
	if !ok {
		return nil, reject("not a JSON object")
	}
	r := &Request{}
	if r.ID, ok = asString(o.Get("id")); !ok {
		return nil, reject("id is not a string")
	}
	if !ValidID(r.ID) {
		return nil, reject("id %s is not a safe file name", QuoteShort(r.ID))
	}
	if r.CreatedAt, ok = asFloat(o.Get("createdAt")); !ok {
		return nil, reject("createdAt is not a finite JSON number")
	}
	if r.RequesterSessionID, ok = asString(o.Get("requesterSessionId")); !ok {
		return nil, reject("requesterSessionId is not a string")
	}
	if r.TargetSessionID, ok = asString(o.Get("targetSessionId")); !ok {
		return nil, reject("targetSessionId is not a string")
	}
	if r.RequesterAgentName, ok = asString(o.Get("requesterAgentName")); !ok {
		return nil, reject("requesterAgentName is not a string")
	}
	r.readOptional(o)
	return r, nil
}

// readOptional validates each optional field on its own; a malformed one is
// dropped and recorded in r.Dropped.
func (r *Request) readOptional(o object) {
	r.Source = SourceToolCall
	optional(r, o, "source", &r.Source, readSource)
	optional(r, o, "surface", &r.Surface, readNullableString)
	optional(r, o, "value", &r.Value, readNullableString)
	optional(r, o, "message", &r.Message, readString)
	optional(r, o, "payload", &r.Payload, readPayload)
	optional(r, o, "sessionApproval", &r.SessionApproval, readSessionApproval)
	optional(r, o, "accessIntent", &r.AccessIntent, readAccessIntent)
}

// optional sets *dst from the field key when it is present and read accepts
// it; a field read refuses is dropped and recorded in r.Dropped.
func optional[T any](r *Request, o object, key string, dst *T, read func(jsonparse.Value) (T, error)) {
	v := o.Get(key)
	if !present(v) {
		return
	}
	if x, err := read(v); err == nil {
		*dst = x
	} else {
		r.Dropped = append(r.Dropped, DroppedField{Field: key, Reason: err.Error()})
	}
}

func readSource(v jsonparse.Value) (Source, error) {
	if s, _ := asString(v); validSource(Source(s)) {
		return Source(s), nil
	}
	return "", errors.New("not tool_call, skill_input or skill_read")
}

func readNullableString(v jsonparse.Value) (*string, error) {
	if s, ok := asNullableString(v); ok {
		return s, nil
	}
	return nil, errors.New("not a string or null")
}

func readString(v jsonparse.Value) (*string, error) {
	if s, ok := asString(v); ok {
		return &s, nil
	}
	return nil, errors.New("not a string")
}

func validSource(s Source) bool {
	return s == SourceToolCall || s == SourceSkillInput || s == SourceSkillRead
}

// readSessionApproval accepts the v30+ {grants} shape and, as a permtui
// extension, the legacy {surface, patterns} shape converted to grants.
func readSessionApproval(v jsonparse.Value) (*SessionApproval, error) {
	o, ok := asObject(v)
	if !ok {
		return nil, errors.New("not an object")
	}
	if rawGrants := o.Get("grants"); present(rawGrants) {
		grants, err := readObjects(rawGrants, "grants", true, func(g object, i int) (Grant, error) {
			surface, _ := asString(g.Get("surface"))
			pattern, ok := asString(g.Get("pattern"))
			if surface == "" || !ok {
				return Grant{}, fmt.Errorf("grants[%d] needs a non-empty surface and a string pattern", i)
			}
			return Grant{Surface: surface, Pattern: pattern}, nil
		})
		if err != nil {
			return nil, err
		}
		return &SessionApproval{Grants: grants}, nil
	}
	surface, _ := asString(o.Get("surface"))
	patterns, ok := asStringSlice(o.Get("patterns"))
	if surface == "" || !ok {
		return nil, errors.New("neither {grants} nor legacy {surface, patterns} with string patterns")
	}
	// An empty legacy list suggests nothing; treat it like empty grants.
	if len(patterns) == 0 {
		return nil, errors.New("legacy patterns is empty")
	}
	grants := make([]Grant, len(patterns))
	for i, p := range patterns {
		grants[i] = Grant{Surface: surface, Pattern: p}
	}
	return &SessionApproval{Grants: grants, Legacy: true}, nil
}

// readAccessIntent is all-or-nothing (§4.4).
func readAccessIntent(v jsonparse.Value) (*AccessIntent, error) {
	o, ok := asObject(v)
	if !ok {
		return nil, errors.New("not an object")
	}
	ai := &AccessIntent{}
	if ai.Surface, ok = asString(o.Get("surface")); !ok {
		return nil, errors.New("surface is not a string")
	}
	if ai.MatchValues, ok = asStringSlice(o.Get("matchValues")); !ok {
		return nil, errors.New("matchValues is not an array of strings")
	}
	if ai.BoundaryValue, ok = asNullableString(o.Get("boundaryValue")); !ok {
		return nil, errors.New("boundaryValue is not a string or null")
	}
	if ai.RequesterCwd, ok = asString(o.Get("requesterCwd")); !ok {
		return nil, errors.New("requesterCwd is not a string")
	}
	p, ok := asObject(o.Get("principal"))
	if !ok {
		return nil, errors.New("principal is not an object")
	}
	sid, ok1 := asString(p.Get("sessionId"))
	agent, ok2 := asString(p.Get("agentName"))
	if !ok1 || !ok2 {
		return nil, errors.New("principal needs string sessionId and agentName")
	}
	ai.Principal = Principal{SessionID: sid, AgentName: agent}
	if ai.Floor, ok = asOptionalString(o.Get("floor")); !ok {
		return nil, errors.New("floor is not a string")
	}
	if uv := o.Get("askingUnits"); present(uv) {
		units, err := readObjects(uv, "askingUnits", true, readAskingUnit)
		if err != nil {
			return nil, err
		}
		ai.AskingUnits = units
	}
	return ai, nil
}

func readAskingUnit(u object, i int) (AskingUnit, error) {
	cmd, ok := asString(u.Get("command"))
	if !ok {
		return AskingUnit{}, fmt.Errorf("askingUnits[%d].command is not a string", i)
	}
	floor, ok := asOptionalString(u.Get("floor"))
	if !ok {
		return AskingUnit{}, fmt.Errorf("askingUnits[%d].floor is not a string", i)
	}
	return AskingUnit{Command: cmd, Floor: floor}, nil
}

// readObjects reads an array of objects (with nonEmpty, one of at least
// one), each by read, which is given its index for its errors.
func readObjects[T any](v jsonparse.Value, name string, nonEmpty bool, read func(o object, i int) (T, error)) ([]T, error) {
	arr, ok := asArray(v)
	switch {
	case !ok:
		return nil, fmt.Errorf("%s is not an array", name)
	case nonEmpty && len(arr) == 0:
		return nil, fmt.Errorf("%s is empty", name)
	}
	out := make([]T, 0, len(arr))
	for i, e := range arr {
		o, ok := asObject(e)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is not an object", name, i)
		}
		t, err := read(o, i)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

var payloadKinds = map[string]bool{
	"bash": true, "mcp": true, "tool": true, "path": true, "external_directory": true,
	"bash_external_directory": true, "skill": true, "skill_read": true, "forwarded": true,
}

func validCommandContext(c *string) bool {
	return c == nil || *c == "command_substitution" || *c == "process_substitution" || *c == "subshell"
}

// readPayload is all-or-nothing; every nullable key must be present (§4.5).
func readPayload(v jsonparse.Value) (*Payload, error) {
	o, ok := asObject(v)
	if !ok {
		return nil, errors.New("not an object")
	}
	p := &Payload{}
	if p.Kind, _ = asString(o.Get("kind")); !payloadKinds[p.Kind] {
		return nil, errors.New("unknown kind")
	}
	req, ok := asObject(o.Get("request"))
	if !ok {
		return nil, errors.New("request is not an object")
	}
	who, ok := asObject(req.Get("requester"))
	if !ok {
		return nil, errors.New("request.requester is not an object")
	}
	pr := &p.Request
	var okAll [8]bool
	pr.Requester.AgentName, okAll[0] = asNullableString(who.Get("agentName"))
	pr.Requester.Forwarded, okAll[1] = asBool(who.Get("forwarded"))
	pr.Requester.SessionID, okAll[2] = asNullableString(who.Get("sessionId"))
	pr.Surface, okAll[3] = asString(req.Get("surface"))
	pr.ToolName, okAll[4] = asNullableString(req.Get("toolName"))
	pr.InvokedToolName, okAll[5] = asNullableString(req.Get("invokedToolName"))
	pr.Value, okAll[6] = asString(req.Get("value"))
	pr.MatchedPattern, okAll[7] = asNullableString(req.Get("matchedPattern"))
	if slices.Contains(okAll[:], false) {
		return nil, errors.New("request has a missing or mistyped field")
	}
	// 40.0.0 added matchedSpelling; older children omit it, so a missing key
	// reads as null (the one exception to §4.5's "present").
	if present(req.Get("matchedSpelling")) {
		if pr.MatchedSpelling, ok = asNullableString(req.Get("matchedSpelling")); !ok {
			return nil, errors.New("request.matchedSpelling is not a string or null")
		}
	}
	if pr.CommandContext, ok = asNullableString(req.Get("commandContext")); !ok || !validCommandContext(pr.CommandContext) {
		return nil, errors.New("request.commandContext is invalid")
	}
	if pr.ExecutedUnit, ok = asNullableString(req.Get("executedUnit")); !ok {
		return nil, errors.New("request.executedUnit is not a string or null")
	}
	var err error
	p.Evidence, err = readObjects(o.Get("evidence"), "evidence", false, func(eo object, i int) (Evidence, error) {
		label, ok1 := asString(eo.Get("label"))
		text, ok2 := asString(eo.Get("text"))
		detail, ok3 := asNullableString(eo.Get("detail"))
		if !ok1 || !ok2 || !ok3 {
			return Evidence{}, fmt.Errorf("evidence[%d] is malformed", i)
		}
		return Evidence{Label: label, Text: text, Detail: detail}, nil
	})
	if err != nil {
		return nil, err
	}
	p.Annotations, err = readObjects(o.Get("annotations"), "annotations", false, func(ao object, i int) (Annotation, error) {
		src, ok1 := asString(ao.Get("source"))
		text, ok2 := asString(ao.Get("text"))
		if !ok1 || !ok2 {
			return Annotation{}, fmt.Errorf("annotations[%d] is malformed", i)
		}
		return Annotation{Source: src, Text: text}, nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// MarshalJSON writes a legacy suggestion in the {surface, patterns} shape it
// came in, any other as {grants}.
func (sa SessionApproval) MarshalJSON() ([]byte, error) {
	if !sa.Legacy || len(sa.Grants) == 0 {
		return marshalCompact(struct {
			Grants []Grant `json:"grants"`
		}{sa.Grants})
	}
	patterns := make([]string, len(sa.Grants))
	for i, g := range sa.Grants {
		patterns[i] = g.Pattern
	}
	return marshalCompact(struct {
		Surface  string   `json:"surface"`
		Patterns []string `json:"patterns"`
	}{sa.Grants[0].Surface, patterns})
}

// MarshalRequest writes a request as a child does: compact JSON in the key
// order of §4.2/§4.3, no HTML escaping. A legacy SessionApproval is written
// in the legacy {surface, patterns} shape. It refuses requests ParseRequest
// would reject or partly drop, so what it writes reads back the same.
func MarshalRequest(r *Request) ([]byte, error) {
	if err := checkWritableRequest(r); err != nil {
		return nil, fmt.Errorf("marshal request: %w", err)
	}
	out := *r
	if out.Source == "" {
		out.Source = SourceToolCall
	}
	if r.Payload != nil {
		p := *r.Payload
		p.Evidence, p.Annotations = NonNil(p.Evidence), NonNil(p.Annotations)
		out.Payload = &p
	}
	if r.AccessIntent != nil {
		ai := *r.AccessIntent
		ai.MatchValues = NonNil(ai.MatchValues)
		out.AccessIntent = &ai
	}
	return marshalCompact(out)
}

// NonNil is s, or an empty slice for nil: an array JSON writes as [], never
// null (the wire's, and headless lines').
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func checkWritableRequest(r *Request) error {
	switch {
	case r == nil:
		return errors.New("nil request")
	case !ValidID(r.ID):
		return fmt.Errorf("unsafe id %q", r.ID)
	case math.IsNaN(r.CreatedAt) || math.IsInf(r.CreatedAt, 0):
		return errors.New("createdAt is not finite")
	case r.Source != "" && !validSource(r.Source):
		return fmt.Errorf("unknown source %q", r.Source)
	}
	if p := r.Payload; p != nil && (!payloadKinds[p.Kind] || !validCommandContext(p.Request.CommandContext)) {
		return errors.New("payload has an unknown kind or commandContext")
	}
	if sa := r.SessionApproval; sa != nil {
		if len(sa.Grants) == 0 {
			return errors.New("sessionApproval has no grants")
		}
		for _, g := range sa.Grants {
			if g.Surface == "" || sa.Legacy && g.Surface != sa.Grants[0].Surface {
				return errors.New("sessionApproval grant surface is empty or, in the legacy shape, not shared")
			}
		}
	}
	if ai := r.AccessIntent; ai != nil && ai.AskingUnits != nil && len(ai.AskingUnits) == 0 {
		return errors.New("accessIntent.askingUnits is empty")
	}
	return nil
}
