package resolve

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/jsonparse"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

type matcherVector struct {
	ID      string `json:"id"`
	Pattern string `json:"pattern"`
	Value   string `json:"value"`
	Match   bool   `json:"match"`
	Home    string `json:"home"`
}

func TestMatcherVectors(t *testing.T) {
	for _, v := range testkit.ReadJSONL[matcherVector](t, "matcher.jsonl") {
		if got := MatchPattern(v.Pattern, v.Value, v.Home); got != v.Match {
			t.Errorf("%s: match(%q, %q) = %v, want %v", v.ID, v.Pattern, v.Value, got, v.Match)
		}
	}
}

// policy loads the vector's files, laid out in a fresh directory.
func rulesetPolicy(t *testing.T, v testkit.Ruleset) *Policy {
	root := t.TempDir()
	opts := LoadOptions{AgentDir: filepath.Join(root, "agent"), ProjectDir: filepath.Join(root, "proj"), TrustProject: true, Home: v.Home}
	v.WriteFiles(t, opts.AgentDir, opts.ProjectDir)
	return Load(opts)
}

// vectorGrants are the vector's recorded grants in wire form.
func vectorGrants(v testkit.Ruleset) []wire.Grant {
	var grants []wire.Grant
	for _, g := range v.Grants {
		grants = append(grants, wire.Grant{Surface: g.Surface, Pattern: g.Pattern})
	}
	return grants
}

func TestRulesetVectors(t *testing.T) {
	for _, v := range testkit.ReadJSONL[testkit.Ruleset](t, "ruleset.jsonl") {
		t.Run(v.ID, func(t *testing.T) { checkRulesetVector(t, v) })
	}
}

// TestParityRepros: issue 10's five classes of disagreement with pi's
// evaluator, each giving pi's answer.
func TestParityRepros(t *testing.T) {
	for _, v := range testkit.ParityRepros() {
		t.Run(v.ID, func(t *testing.T) { checkRulesetVector(t, v) })
	}
}

// TestParityRound3: issue 21's classes of disagreement with pi, each giving
// pi's answer or, where a vector's why says STRICTER, permtui's stricter one.
func TestParityRound3(t *testing.T) {
	for _, v := range testkit.ReadJSONLFile[testkit.Ruleset](t, filepath.Join("testdata", "parity3.jsonl")) {
		t.Run(v.ID, func(t *testing.T) { checkRulesetVector(t, v) })
	}
}

// checkRulesetVector loads the vector's files, judges its facts (or its raw
// intent) and compares every field the vector states.
func checkRulesetVector(t *testing.T, v testkit.Ruleset) {
	p := rulesetPolicy(t, v)
	grants := vectorGrants(v)
	if p.yolo != v.Yolo {
		t.Errorf("yolo = %v, want %v", p.yolo, v.Yolo)
	}
	var got Verdict
	if v.Intent != "" {
		text := `{"id":"` + v.ID + `","createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a"`
		if v.RawIntent != nil {
			text += `,"accessIntent":` + string(*v.RawIntent)
		}
		req, err := wire.ParseRequest([]byte(text + "}"))
		if err != nil || req.AccessIntent != nil {
			t.Fatalf("ParseRequest = %+v, %v; want a request without a usable intent", req, err)
		}
		got = p.Resolve(req, grants)
		if !strings.Contains(got.Explanation, "the request carries no facts") {
			t.Errorf("explanation %q does not say the request has no facts", got.Explanation)
		}
		if got.Rule != nil || got.DecidedBy() != nil {
			t.Errorf("a request without facts got a rule: %+v", got.Rule)
		}
	} else {
		intent := &wire.AccessIntent{Surface: v.Surface, MatchValues: v.Values, Floor: v.Floor,
			Principal: wire.Principal{SessionID: "s", AgentName: v.Agent}}
		for _, u := range v.AskingUnits {
			intent.AskingUnits = append(intent.AskingUnits, wire.AskingUnit{Command: u.Command, Floor: u.Floor})
		}
		got = p.Resolve(&wire.Request{ID: v.ID, AccessIntent: intent}, grants)
	}
	if got.Action != Action(v.Expect) {
		t.Fatalf("action = %s, want %s\n%s", got.Action, v.Expect, got.Explanation)
	}
	if got.Explanation == "" {
		t.Error("empty explanation")
	}
	if v.Reason != nil && got.Reason != *v.Reason {
		t.Errorf("reason = %q, want %q", got.Reason, *v.Reason)
	}
	if len(v.Pattern) > 0 {
		// Decoded by the config parser, which keeps a lone surrogate.
		pv, err := parseJSON(string(v.Pattern))
		if err != nil || (pv.Kind != jsonparse.String && pv.Kind != jsonparse.Null) {
			t.Fatalf("pattern %s: %v", v.Pattern, err)
		}
		var want *string
		if pv.Kind == jsonparse.String {
			want = &pv.Str
		}
		if (want == nil) != (got.Pattern == nil) || (want != nil && *want != *got.Pattern) {
			t.Errorf("pattern = %v, want %v\n%s", deref(got.Pattern), deref(want), got.Explanation)
		}
	}
	if v.Origin != nil && got.Origin != *v.Origin {
		t.Errorf("origin = %q, want %q\n%s", got.Origin, *v.Origin, got.Explanation)
	}
	if v.Member != nil && got.Member != *v.Member {
		t.Errorf("member = %q, want %q\n%s", got.Member, *v.Member, got.Explanation)
	}
	if v.ResponseState != nil {
		if state := responseStateOf(got); state != wire.State(*v.ResponseState) {
			t.Errorf("response state = %s, want %s", state, *v.ResponseState)
		}
	}
	if v.Intent == "" {
		d := got.DecidedBy()
		if d == nil || d.Kind != wire.DecidedByRule || d.Surface != v.Surface || deref(d.Pattern) != deref(got.Pattern) || deref(d.Origin) != got.Origin {
			t.Errorf("DecidedBy = %+v for verdict %+v", d, got)
		}
	}
}

// responseStateOf is the wire state an automatic answer takes (wire §8).
func responseStateOf(v Verdict) wire.State {
	switch {
	case v.Action == Allow:
		return wire.StateApproved
	case v.Action == Deny && v.Reason != "":
		return wire.StateDeniedWithReason
	case v.Action == Deny:
		return wire.StateDenied
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
