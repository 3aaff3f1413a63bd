package testkit

import (
	"strings"

	json "github.com/goccy/go-json"
)

// ParityRepros are the minimal repros of the five classes where permtui
// disagreed with pi's evaluator (issue 10) and the 40.x grant cases, each
// with pi's answer, in the
// shape of a ruleset vector so the resolver and 'resolve --batch' run them
// like the shared vectors. Raw file bytes (invalid UTF-8 included) go in
// GlobalText, Project and Agents.
func ParityRepros() []Ruleset {
	var rs repros
	rs.reasonLimits()
	rs.unsafeIntegers()
	rs.protoKeys()
	rs.invalidUTF8()
	rs.fallbackOrigin()
	rs.grantPatterns()
	return rs.out
}

// repros collects ParityRepros, each with the origin and pattern of the
// rule pi says decides it.
type repros struct{ out []Ruleset }

func (rs *repros) add(r Ruleset, origin string, pat json.RawMessage) {
	if origin != "" {
		r.Origin = str(origin)
	}
	r.Pattern = pat
	rs.out = append(rs.out, r)
}

// repro is a case over a global config alone.
func repro(id, global string, surface string, values []string, expect string) Ruleset {
	return Ruleset{ID: id, Home: "/home/u", GlobalText: str(global), Surface: surface, Values: values, Expect: expect}
}

func str(s string) *string { return &s }

func patternJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

var nullPattern = json.RawMessage("null")

// reasonLimits: 1. a deny reason is limited to 500 code points, not UTF-16
// units.
func (rs *repros) reasonLimits() {
	emoji := strings.Repeat("😀", 251) // 251 code points, 502 UTF-16 units
	reasonRule := `{"permission":{"bash":{"*":"allow","rm *":{"action":"deny","reason":"` + emoji + `"}}}}`
	r := repro("P1a-reason-code-points", reasonRule, "bash", []string{"rm x"}, "deny")
	r.Reason = str(emoji)
	rs.add(r, "global", patternJSON("rm *"))
	rs.add(repro("P1b-reason-501-code-points", `{"permission":{"bash":{"*":"allow","rm *":{"action":"deny","reason":"`+strings.Repeat("😀", 501)+`"}}}}`,
		"bash", []string{"rm x"}, "ask"), "builtin", nullPattern)
	r = repro("P1c-reason-in-project-sets-no-floor", `{"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "allow")
	r.Project = json.RawMessage(reasonRule)
	rs.add(r, "project", patternJSON("*"))
}

// unsafeIntegers: 2. integers beyond 2^53-1 reject the file (zod's int()
// takes safe integers only), for every integer setting.
func (rs *repros) unsafeIntegers() {
	for _, key := range []string{"toolInputPreviewMaxLength", "toolTextSummaryMaxLength", "forwardingTimeoutMs",
		"promptMaxRows", "promptFieldMaxWidth", "reviewLogFieldMaxWidth"} {
		rs.add(repro("P2-"+key+"-unsafe", `{"`+key+`":9007199254740992,"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "ask"), "builtin", nullPattern)
		rs.add(repro("P2-"+key+"-safe", `{"`+key+`":9007199254740991,"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "allow"), "global", patternJSON("*"))
	}
	r := repro("P2-unsafe-in-project-floors", `{"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "ask")
	r.Project = json.RawMessage(`{"promptMaxRows":1e300}`)
	rs.add(r, "fail-closed", patternJSON("*"))
}

// protoKeys: 3a. __proto__ as a pattern key is absent: it never allows.
// 3b. zod's record parser skips __proto__ without checking its value.
func (rs *repros) protoKeys() {
	rs.add(repro("P3a-proto-pattern-key", `{"permission":{"bash":{"__proto__":"allow"}}}`, "bash", []string{"__proto__"}, "ask"), "builtin", nullPattern)
	r := repro("P3a-proto-frontmatter-pattern", `{}`, "bash", []string{"__proto__"}, "ask")
	r.Agent, r.Agents = "a", map[string]string{"a": "---\npermission:\n  bash:\n    __proto__: allow\n---\n"}
	rs.add(r, "builtin", nullPattern)
	r = repro("P3a-proto-frontmatter-surface-map", `{}`, "bash", []string{"ls"}, "ask")
	r.Agent, r.Agents = "a", map[string]string{"a": "---\npermission:\n  __proto__:\n    bash: allow\n  skill: deny\n---\n"}
	rs.add(r, "builtin", nullPattern)
	rs.add(repro("P3b-proto-surface-unchecked", `{"permission":{"__proto__":"maybe","bash":"allow"}}`, "bash", []string{"ls"}, "allow"), "global", patternJSON("*"))
	rs.add(repro("P3b-proto-pattern-unchecked", `{"permission":{"bash":{"__proto__":{"action":"allow"},"ls":"allow"}}}`, "bash", []string{"ls"}, "allow"), "global", patternJSON("ls"))
	rs.add(repro("P3b-proto-shellTools", `{"shellTools":{"__proto__":5},"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "allow"), "global", patternJSON("*"))
}

// invalidUTF8: 4. invalid UTF-8 decodes as Node's readFileSync does: one
// U+FFFD per maximal subpart (FF FE are two; E2 82 before "b" is one).
func (rs *repros) invalidUTF8() {
	rs.add(repro("P4-two-invalid-bytes", "{\"permission\":{\"skill\":{\"a\xFF\xFEb\":\"allow\"}}}", "skill", []string{"a\uFFFD\uFFFDb"}, "allow"), "global", patternJSON("a\uFFFD\uFFFDb"))
	rs.add(repro("P4-two-invalid-bytes-not-one", "{\"permission\":{\"skill\":{\"a\xFF\xFEb\":\"allow\"}}}", "skill", []string{"a\uFFFDb"}, "ask"), "builtin", nullPattern)
	rs.add(repro("P4-truncated-sequence", "{\"permission\":{\"skill\":{\"a\xE2\x82b\":\"allow\"}}}", "skill", []string{"a\uFFFDb"}, "allow"), "global", patternJSON("a\uFFFDb"))
	r := repro("P4-agent-file", `{}`, "skill", []string{"x\uFFFD\uFFFD\uFFFDy"}, "deny")
	r.Agent, r.Agents = "a", map[string]string{"a": "---\npermission:\n  skill:\n    x\xF0\x9F\xFF\xC0y: deny\n---\n"}
	rs.add(r, "agent", patternJSON("x\uFFFD\uFFFD\uFFFDy"))
}

// fallbackOrigin: 5. the default rule's origin is that of "*" → "*", also
// when "*" is a pattern map (whose action is ignored).
func (rs *repros) fallbackOrigin() {
	rs.add(repro("P5-fallback-origin-from-map", `{"permission":{"*":{"*":"deny"}}}`, "bash", []string{"ls"}, "ask"), "global", nullPattern)
	rs.add(repro("P5-fallback-map-without-star", `{"permission":{"*":{"x":"deny"}}}`, "bash", []string{"ls"}, "ask"), "builtin", nullPattern)
	r := repro("P5-fallback-origin-project-map", `{"permission":{"*":"deny"}}`, "skill", []string{"s"}, "ask")
	r.Project = json.RawMessage(`{"permission":{"*":{"*":"allow"}}}`)
	rs.add(r, "project", nullPattern)
}

// grantPatterns: wire-protocol §13 (40.x): suggested grant patterns match
// with the ordinary wildcard rules, and a partly granted chain's floored
// rest asks.
func (rs *repros) grantPatterns() {
	for _, tc := range []struct{ id, value, expect, origin, pattern string }{
		{"U40-nohup-grant-covers", "nohup mytool x", "allow", "session", "nohup mytool *"},
		{"U40-nohup-grant-not-other-tool", "nohup othertool x", "ask", "global", "*"},
	} {
		r := repro(tc.id, `{"permission":{"bash":"ask"}}`, "bash", []string{tc.value}, tc.expect)
		r.Grants = []Grant{{Surface: "bash", Pattern: "nohup mytool *"}}
		rs.add(r, tc.origin, patternJSON(tc.pattern))
	}
	r := repro("U40-floored-unit-under-grant", `{"permission":{"bash":{"*":"ask","sudo *":"allow"}}}`, "bash", []string{"sudo rm y && sudo rm z"}, "ask")
	r.Grants = []Grant{{Surface: "bash", Pattern: "sudo rm y"}}
	r.AskingUnits = append(r.AskingUnits, struct {
		Command string  `json:"command"`
		Floor   *string `json:"floor"`
	}{"sudo rm z", str("<indirection-bash-wrapper>")})
	rs.add(r, "global", patternJSON("<indirection-bash-wrapper>"))
}
