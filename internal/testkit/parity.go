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
	emoji := strings.Repeat("😀", 251) // 251 code points, 502 UTF-16 units
	str := func(s string) *string { return &s }
	pattern := func(s string) json.RawMessage {
		b, _ := json.Marshal(s)
		return b
	}
	null := json.RawMessage("null")
	reasonRule := `{"permission":{"bash":{"*":"allow","rm *":{"action":"deny","reason":"` + emoji + `"}}}}`
	v := func(id, global string, surface string, values []string, expect string) Ruleset {
		return Ruleset{ID: id, Home: "/home/u", GlobalText: str(global), Surface: surface, Values: values, Expect: expect}
	}
	var out []Ruleset
	add := func(r Ruleset, origin string, pat json.RawMessage) {
		if origin != "" {
			r.Origin = str(origin)
		}
		r.Pattern = pat
		out = append(out, r)
	}

	// 1. A deny reason is limited to 500 code points, not UTF-16 units.
	r := v("P1a-reason-code-points", reasonRule, "bash", []string{"rm x"}, "deny")
	r.Reason = str(emoji)
	add(r, "global", pattern("rm *"))
	add(v("P1b-reason-501-code-points", `{"permission":{"bash":{"*":"allow","rm *":{"action":"deny","reason":"`+strings.Repeat("😀", 501)+`"}}}}`,
		"bash", []string{"rm x"}, "ask"), "builtin", null)
	r = v("P1c-reason-in-project-sets-no-floor", `{"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "allow")
	r.Project = json.RawMessage(reasonRule)
	add(r, "project", pattern("*"))

	// 2. Integers beyond 2^53-1 reject the file (zod's int() takes safe
	// integers only), for every integer setting.
	for _, key := range []string{"toolInputPreviewMaxLength", "toolTextSummaryMaxLength", "forwardingTimeoutMs",
		"promptMaxRows", "promptFieldMaxWidth", "reviewLogFieldMaxWidth"} {
		add(v("P2-"+key+"-unsafe", `{"`+key+`":9007199254740992,"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "ask"), "builtin", null)
		add(v("P2-"+key+"-safe", `{"`+key+`":9007199254740991,"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "allow"), "global", pattern("*"))
	}
	r = v("P2-unsafe-in-project-floors", `{"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "ask")
	r.Project = json.RawMessage(`{"promptMaxRows":1e300}`)
	add(r, "fail-closed", pattern("*"))

	// 3a. __proto__ as a pattern key is absent: it never allows.
	add(v("P3a-proto-pattern-key", `{"permission":{"bash":{"__proto__":"allow"}}}`, "bash", []string{"__proto__"}, "ask"), "builtin", null)
	r = v("P3a-proto-frontmatter-pattern", `{}`, "bash", []string{"__proto__"}, "ask")
	r.Agent, r.Agents = "a", map[string]string{"a": "---\npermission:\n  bash:\n    __proto__: allow\n---\n"}
	add(r, "builtin", null)
	r = v("P3a-proto-frontmatter-surface-map", `{}`, "bash", []string{"ls"}, "ask")
	r.Agent, r.Agents = "a", map[string]string{"a": "---\npermission:\n  __proto__:\n    bash: allow\n  skill: deny\n---\n"}
	add(r, "builtin", null)
	// 3b. zod's record parser skips __proto__ without checking its value.
	add(v("P3b-proto-surface-unchecked", `{"permission":{"__proto__":"maybe","bash":"allow"}}`, "bash", []string{"ls"}, "allow"), "global", pattern("*"))
	add(v("P3b-proto-pattern-unchecked", `{"permission":{"bash":{"__proto__":{"action":"allow"},"ls":"allow"}}}`, "bash", []string{"ls"}, "allow"), "global", pattern("ls"))
	add(v("P3b-proto-shellTools", `{"shellTools":{"__proto__":5},"permission":{"bash":"allow"}}`, "bash", []string{"ls"}, "allow"), "global", pattern("*"))

	// 4. Invalid UTF-8 decodes as Node's readFileSync does: one U+FFFD per
	// maximal subpart (FF FE are two; E2 82 before "b" is one).
	add(v("P4-two-invalid-bytes", "{\"permission\":{\"skill\":{\"a\xFF\xFEb\":\"allow\"}}}", "skill", []string{"a\uFFFD\uFFFDb"}, "allow"), "global", pattern("a\uFFFD\uFFFDb"))
	add(v("P4-two-invalid-bytes-not-one", "{\"permission\":{\"skill\":{\"a\xFF\xFEb\":\"allow\"}}}", "skill", []string{"a\uFFFDb"}, "ask"), "builtin", null)
	add(v("P4-truncated-sequence", "{\"permission\":{\"skill\":{\"a\xE2\x82b\":\"allow\"}}}", "skill", []string{"a\uFFFDb"}, "allow"), "global", pattern("a\uFFFDb"))
	r = v("P4-agent-file", `{}`, "skill", []string{"x\uFFFD\uFFFD\uFFFDy"}, "deny")
	r.Agent, r.Agents = "a", map[string]string{"a": "---\npermission:\n  skill:\n    x\xF0\x9F\xFF\xC0y: deny\n---\n"}
	add(r, "agent", pattern("x\uFFFD\uFFFD\uFFFDy"))

	// 5. The default rule's origin is that of "*" → "*", also when "*" is a
	// pattern map (whose action is ignored).
	add(v("P5-fallback-origin-from-map", `{"permission":{"*":{"*":"deny"}}}`, "bash", []string{"ls"}, "ask"), "global", null)
	add(v("P5-fallback-map-without-star", `{"permission":{"*":{"x":"deny"}}}`, "bash", []string{"ls"}, "ask"), "builtin", null)
	r = v("P5-fallback-origin-project-map", `{"permission":{"*":"deny"}}`, "skill", []string{"s"}, "ask")
	r.Project = json.RawMessage(`{"permission":{"*":{"*":"allow"}}}`)
	add(r, "project", null)

	// wire-protocol §13 (40.x): suggested grant patterns match with the
	// ordinary wildcard rules, and a partly granted chain's floored rest asks.
	for _, tc := range []struct{ id, value, expect, origin, pattern string }{
		{"U40-nohup-grant-covers", "nohup mytool x", "allow", "session", "nohup mytool *"},
		{"U40-nohup-grant-not-other-tool", "nohup othertool x", "ask", "global", "*"},
	} {
		r = v(tc.id, `{"permission":{"bash":"ask"}}`, "bash", []string{tc.value}, tc.expect)
		r.Grants = []Grant{{Surface: "bash", Pattern: "nohup mytool *"}}
		add(r, tc.origin, pattern(tc.pattern))
	}
	r = v("U40-floored-unit-under-grant", `{"permission":{"bash":{"*":"ask","sudo *":"allow"}}}`, "bash", []string{"sudo rm y && sudo rm z"}, "ask")
	r.Grants = []Grant{{Surface: "bash", Pattern: "sudo rm y"}}
	r.AskingUnits = append(r.AskingUnits, struct {
		Command string  `json:"command"`
		Floor   *string `json:"floor"`
	}{"sudo rm z", str("<indirection-bash-wrapper>")})
	add(r, "global", pattern("<indirection-bash-wrapper>"))
	return out
}
