package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const servedID = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"

func strp(s string) *string { return &s }

// The §10.4-10.7 examples, byte for byte.
func TestMarshalResponseSpecExamples(t *testing.T) {
	cases := []struct {
		name string
		r    Response
		want string
	}{
		{"10.4 approve once", Response{Approved: true, State: StateApproved, ResponderSessionID: servedID, RespondedAt: 1791279020001, DecidedBy: UserDecision()},
			`{"approved":true,"state":"approved","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":1791279020001,"decidedBy":{"kind":"user","via":"dialog"}}`},
		{"10.5 deny with reason", Response{State: StateDeniedWithReason, DenialReason: "Don't run sudo from a subagent; ask me in the main session.", ResponderSessionID: servedID, RespondedAt: 1791279051234, DecidedBy: UserDecision()},
			`{"approved":false,"state":"denied_with_reason","denialReason":"Don't run sudo from a subagent; ask me in the main session.","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":1791279051234,"decidedBy":{"kind":"user","via":"dialog"}}`},
		{"10.6 session", Response{Approved: true, State: StateApprovedForSession, ResponderSessionID: servedID, RespondedAt: 1791279030000, DecidedBy: UserDecision()},
			`{"approved":true,"state":"approved_for_session","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":1791279030000,"decidedBy":{"kind":"user","via":"dialog"}}`},
		{"10.6 session family", Response{Approved: true, State: StateApprovedForSession, ResponderSessionID: servedID, RespondedAt: 1791279030000, DecidedBy: UserDecision(), SessionGrantWidth: GrantWidthFamily},
			`{"approved":true,"state":"approved_for_session","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":1791279030000,"decidedBy":{"kind":"user","via":"dialog"},"sessionGrantWidth":"family"}`},
		{"10.7 rule deny", Response{State: StateDeniedWithReason, DenialReason: "sudo is never allowed for subagents", ResponderSessionID: servedID, RespondedAt: 1791279045000, DecidedBy: RuleDecision("bash", strp("sudo *"), strp("permtui"))},
			`{"approved":false,"state":"denied_with_reason","denialReason":"sudo is never allowed for subagents","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":1791279045000,"decidedBy":{"kind":"rule","surface":"bash","pattern":"sudo *","origin":"permtui"}}`},
		{"10.7 minimal", Response{Approved: true, State: StateApproved, ResponderSessionID: servedID, RespondedAt: 1784124009000},
			`{"approved":true,"state":"approved","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":1784124009000}`},
		{"rule with null pattern and origin", Response{Approved: true, State: StateApproved, ResponderSessionID: servedID, RespondedAt: 1, DecidedBy: RuleDecision("path_read", nil, nil)},
			`{"approved":true,"state":"approved","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":1,"decidedBy":{"kind":"rule","surface":"path_read","pattern":null,"origin":null}}`},
		{"unavailable", Response{State: StateDeniedWithReason, DenialReason: "permtui exited", ResponderSessionID: servedID, RespondedAt: 2, DecidedBy: UnavailableDecision("serving node shut down")},
			`{"approved":false,"state":"denied_with_reason","denialReason":"permtui exited","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":2,"decidedBy":{"kind":"unavailable","reason":"serving node shut down"}}`},
		{"gate error", Response{State: StateDenied, ResponderSessionID: servedID, RespondedAt: 3, DecidedBy: &DecisionSource{Kind: DecidedByGateError, Reason: strp("boom")}},
			`{"approved":false,"state":"denied","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":3,"decidedBy":{"kind":"gate_error","reason":"boom"}}`},
		{"no HTML escaping", Response{State: StateDeniedWithReason, DenialReason: `<b>&"x"</b>`, ResponderSessionID: servedID, RespondedAt: 4},
			`{"approved":false,"state":"denied_with_reason","denialReason":"<b>&\"x\"</b>","responderSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","respondedAt":4}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MarshalResponse(c.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestValidateResponseRefuses(t *testing.T) {
	ok := Response{Approved: true, State: StateApproved, ResponderSessionID: servedID, RespondedAt: 1}
	cases := map[string]func(r *Response){
		"serving-session state":      func(r *Response) { r.State = StateApprovedForServingSession },
		"unknown state":              func(r *Response) { r.State = "allowed" },
		"empty state":                func(r *Response) { r.State = "" },
		"approved with deny":         func(r *Response) { r.State = StateDenied },
		"denied with approve":        func(r *Response) { r.Approved = false },
		"reason on plain denied":     func(r *Response) { r.Approved, r.State, r.DenialReason = false, StateDenied, "no" },
		"reason on approve":          func(r *Response) { r.DenialReason = "no" },
		"blank reason":               func(r *Response) { r.Approved, r.State, r.DenialReason = false, StateDeniedWithReason, " \u00a0\ufeff" },
		"untrimmed reason":           func(r *Response) { r.Approved, r.State, r.DenialReason = false, StateDeniedWithReason, " no" },
		"missing reason":             func(r *Response) { r.Approved, r.State = false, StateDeniedWithReason },
		"family on approved":         func(r *Response) { r.SessionGrantWidth = GrantWidthFamily },
		"proven written":             func(r *Response) { r.State, r.SessionGrantWidth = StateApprovedForSession, "proven" },
		"empty responder":            func(r *Response) { r.ResponderSessionID = "" },
		"unknown responder":          func(r *Response) { r.ResponderSessionID = "Unknown" },
		"untrimmed responder":        func(r *Response) { r.ResponderSessionID = " " + servedID },
		"no respondedAt":             func(r *Response) { r.RespondedAt = 0 },
		"forwarded decider":          func(r *Response) { r.DecidedBy = &DecisionSource{Kind: DecidedByForwarded} },
		"yolo decider":               func(r *Response) { r.DecidedBy = &DecisionSource{Kind: DecidedByYolo} },
		"user via voice":             func(r *Response) { r.DecidedBy = &DecisionSource{Kind: DecidedByUser, Via: "voice"} },
		"user with stray surface":    func(r *Response) { r.DecidedBy = &DecisionSource{Kind: DecidedByUser, Via: "dialog", Surface: "bash"} },
		"unavailable without reason": func(r *Response) { r.DecidedBy = &DecisionSource{Kind: DecidedByUnavailable} },
		"authorizer defer": func(r *Response) {
			r.DecidedBy = &DecisionSource{Kind: DecidedByAuthorizer, Name: "j", Verdict: "defer"}
		},
	}
	if err := ValidateResponse(ok); err != nil {
		t.Fatalf("base response refused: %v", err)
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			r := ok
			mutate(&r)
			if err := ValidateResponse(r); err == nil {
				t.Fatal("accepted")
			}
			if _, err := MarshalResponse(r); err == nil {
				t.Fatal("MarshalResponse wrote it")
			}
		})
	}
}

func TestReadResponseAsChildDetails(t *testing.T) {
	c, err := ReadResponseAsChild([]byte(`{"approved":false,"state":"denied_with_reason","denialReason":"why","responderSessionId":"","respondedAt":12.9}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.DenialReason != "why" || c.RespondedAt != 12 || c.GrantWidth != GrantWidthProven || c.DecidedByStatus != DecidedByAbsent {
		t.Fatalf("got %+v", c)
	}
	before := time.Now().UnixMilli()
	c, err = ReadResponseAsChild([]byte(`{"approved":true,"state":"approved","responderSessionId":"x","respondedAt":"soon"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.RespondedAt < before {
		t.Fatalf("respondedAt %d was not replaced by the read time", c.RespondedAt)
	}
	// Duplicate keys: the last one wins, as in JSON.parse.
	c, err = ReadResponseAsChild([]byte(`{"approved":true,"approved":false,"state":"denied","responderSessionId":"x"}`))
	if err != nil || c.Approved {
		t.Fatalf("duplicate approved: %+v %v", c, err)
	}
	if _, err := ReadResponseAsChild([]byte(`{"approved":true,"state":"approved","responderSessionId":"x"} {}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestParseRequestRules(t *testing.T) {
	core := `"createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a"`
	for _, id := range []string{"..", ".", "a/b", "a b", "é", ""} {
		if _, err := ParseRequest([]byte(`{"id":"` + id + `",` + core + `}`)); err == nil {
			t.Errorf("id %q accepted", id)
		}
	}
	for _, bad := range []string{`{"id":"x",` + core + `,"createdAt":1e400}`, `"x"`, `true`, `0`, `{}`, ``, `{"id":"x",` + core + `}x`} {
		if _, err := ParseRequest([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	// Duplicate keys: the last wins, so a later bad id rejects.
	if _, err := ParseRequest([]byte(`{"id":"ok",` + core + `,"id":"../x"}`)); err == nil {
		t.Error("later duplicate id ignored")
	}
	r, err := ParseRequest([]byte(`{"id":"Ab.9_-",` + core + `,"source":null,"surface":null,"value":7,"message":null,"sessionApproval":{"surface":"bash","patterns":[]},"accessIntent":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != SourceToolCall || r.Surface != nil || r.Value != nil || r.Message != nil || r.SessionApproval != nil || r.AccessIntent != nil {
		t.Fatalf("got %+v", r)
	}
	var dropped []string
	for _, d := range r.Dropped {
		dropped = append(dropped, d.Field)
	}
	if got := strings.Join(dropped, ","); got != "source,value,message,sessionApproval,accessIntent" {
		t.Fatalf("dropped %s", got)
	}
	big := `{"id":"x",` + core + `,"pad":"` + strings.Repeat("a", MaxFileSize) + `"}`
	var rej *RejectError
	if _, err := ParseRequest([]byte(big)); !errors.As(err, &rej) {
		t.Fatalf("oversized: %v", err)
	}
}

func TestNormalizeAndRouting(t *testing.T) {
	for in, want := range map[string]string{" abc\t": "abc", "UNKNOWN": "", "": "", "  ": "", "..": "", "unknown-1": "unknown-1",
		// pi trims with JavaScript's trim: U+FEFF and U+3000 go, U+0085 stays.
		"\ufeffabc\u3000": "abc", "\u0085abc": "\u0085abc"} {
		got, ok := NormalizeSessionID(in)
		if got != want || ok != (want != "") {
			t.Errorf("NormalizeSessionID(%q) = %q, %v", in, got, ok)
		}
	}
	r := &Request{TargetSessionID: " s1 "}
	if !r.RoutedTo("s1") || r.RoutedTo("s2") || r.RoutedTo("") {
		t.Error("routing by normalized target")
	}
	r.TargetSessionID = "unknown"
	if r.RoutedTo("unknown") {
		t.Error("no-id target routed")
	}
}

// A request speaks for the facts' principal, not the requester it names,
// and for the requester only without facts.
func TestRequestAgent(t *testing.T) {
	r := &Request{RequesterAgentName: "scout"}
	if got := r.Agent(); got != "scout" {
		t.Errorf("without facts: %q", got)
	}
	r.AccessIntent = &AccessIntent{Principal: Principal{AgentName: "builder"}}
	if got := r.Agent(); got != "builder" {
		t.Errorf("with facts: %q", got)
	}
}

func TestMarshalRequestShapes(t *testing.T) {
	msg := "Agent 'researcher' wants to run bash command: npm install left-pad"
	legacy := &Request{
		ID: "1784124001234-q8w2k9zp-51234", CreatedAt: 1784124001234,
		RequesterSessionID: "0198c3b0-1111-7222-8333-944455556666", TargetSessionID: servedID,
		RequesterAgentName: "researcher", Message: &msg, Source: SourceToolCall,
		Surface: strp("bash"), Value: strp("npm install left-pad"),
		SessionApproval: &SessionApproval{Grants: []Grant{{Surface: "bash", Pattern: "npm install *"}}, Legacy: true},
	}
	got, err := MarshalRequest(legacy)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"1784124001234-q8w2k9zp-51234","createdAt":1784124001234,"requesterSessionId":"0198c3b0-1111-7222-8333-944455556666","targetSessionId":"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b","requesterAgentName":"researcher","message":"Agent 'researcher' wants to run bash command: npm install left-pad","source":"tool_call","surface":"bash","value":"npm install left-pad","sessionApproval":{"surface":"bash","patterns":["npm install *"]}}`
	if string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	for name, r := range map[string]*Request{
		"unsafe id":        {ID: "../x"},
		"empty grants":     {ID: "x", SessionApproval: &SessionApproval{}},
		"mixed legacy":     {ID: "x", SessionApproval: &SessionApproval{Legacy: true, Grants: []Grant{{"a", "1"}, {"b", "2"}}}},
		"empty units":      {ID: "x", AccessIntent: &AccessIntent{AskingUnits: []AskingUnit{}}},
		"bad payload kind": {ID: "x", Payload: &Payload{Kind: "nope"}},
		"bad source":       {ID: "x", Source: "cli"},
	} {
		if _, err := MarshalRequest(r); err == nil {
			t.Errorf("%s: marshalled", name)
		}
	}
}

func TestHeartbeat(t *testing.T) {
	h := Heartbeat{SessionID: "a b", PID: 73112, UpdatedAt: 1791279020500}
	data, err := MarshalHeartbeat(h)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"sessionId":"a b","pid":73112,"updatedAt":1791279020500}` {
		t.Fatalf("got %s", data)
	}
	if back, err := ParseHeartbeat(data); err != nil || back != h {
		t.Fatalf("round trip %+v %v", back, err)
	}
	for _, bad := range []string{`{"sessionId":"","pid":1,"updatedAt":1}`, `{"sessionId":"s","pid":0,"updatedAt":1}`,
		`{"sessionId":"s","pid":1.5,"updatedAt":1}`, `{"sessionId":"s","pid":"1","updatedAt":1}`, `{"sessionId":"s","pid":1}`,
		`{"sessionId":"s","pid":1,"updatedAt":"1"}`, `null`, `{`} {
		if _, err := ParseHeartbeat([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	now := time.UnixMilli(10_000)
	alive := func(int) bool { return true }
	dead := func(int) bool { return false }
	for _, c := range []struct {
		updated int64
		alive   func(int) bool
		want    Liveness
	}{{9_000, alive, LivenessAlive}, {5_001, alive, LivenessAlive}, {5_000, alive, LivenessStale}, {9_000, dead, LivenessDeadPID}, {1, dead, LivenessDeadPID}} {
		if got := ClassifyHeartbeat(Heartbeat{SessionID: "s", PID: 5, UpdatedAt: c.updated}, now, c.alive); got != c.want {
			t.Errorf("updatedAt %d: %s, want %s", c.updated, got, c.want)
		}
	}
}

func TestRejectionOfAHugeUnsafeIDStaysShort(t *testing.T) {
	id := strings.Repeat("/", 100000)
	_, err := ParseRequest([]byte(`{"id":"` + id + `","createdAt":1,"requesterSessionId":"a","targetSessionId":"b","requesterAgentName":"c"}`))
	var rej *RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("ParseRequest = %v", err)
	}
	if len(rej.Reason) > 200 {
		t.Fatalf("reason is %d bytes", len(rej.Reason))
	}
}

// accessIntent.surface may be "" (§4.4); a rule answer on it carries that
// surface, and the child reads it (a refused write left the child unanswered).
func TestRuleAnswerOnAnEmptySurfaceIsWrittenAndRead(t *testing.T) {
	data, err := MarshalResponse(Response{State: StateDenied, ResponderSessionID: servedID, RespondedAt: 1, DecidedBy: RuleDecision("", nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadResponseAsChild(data)
	if err != nil || c.DecidedByStatus != DecidedByKept || c.DecidedBy.Surface != "" {
		t.Fatalf("child reads %+v, %v from %s", c, err, data)
	}
}
