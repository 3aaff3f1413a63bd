package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// TestSimulateRefusesACandidatePiRejects: a --config candidate pi would
// reject whole (an unknown top-level key, an action that is not one) is no
// policy: simulate names its problem and exits 2, as for a read error,
// where it judged the rest as if it were the policy and passed (adversarial
// F6); --json carries the problem.
func TestSimulateRefusesACandidatePiRejects(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"*":"ask","bash":{"rm *":"deny"}}}`)
	e.record(t, asked("builder", "rm -rf /", false, wire.UserDecision()))
	for name, text := range map[string]string{
		"typo.json": `{"permission":{"*":"ask","bash":{"rm -rf *":"deny","curl *":"deny"}},"permisson_typo":1}`,
		"bad.json":  `{"permission":{"bash":"maybe"}}`,
	} {
		cfg := filepath.Join(t.TempDir(), name)
		testkit.WriteFile(t, cfg, []byte(text))
		code, out, errOut := runCmd(t, "", e.args("simulate", "--config", cfg)...)
		if code != 2 || !strings.Contains(errOut, cfg) || !strings.Contains(errOut, "rejected") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and the candidate's problem", name, code, out, errOut)
		}
		code, out, _ = runCmd(t, "", e.args("simulate", "--config", cfg, "--json")...)
		var rep struct {
			CandidateProblems []struct{ File, Message string } `json:"candidateProblems"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 2 || len(rep.CandidateProblems) != 1 ||
			rep.CandidateProblems[0].File != cfg || !strings.Contains(rep.CandidateProblems[0].Message, "rejected") {
			t.Errorf("%s --json: exit %d, %v, %q", name, code, err, out)
		}
	}
}

// TestSimulateNamesYoloModeWhereItDecides: a candidate that only turns
// yoloMode on changes every ask into allow; each change and each loosened
// verdict names yoloMode and its file as what decides, where it named the
// ask rule yoloMode overrode ("by "bash" "*" → ask"), an allow by an ask rule
// (s19).
func TestSimulateNamesYoloModeWhereItDecides(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"*":"ask","bash":{"*":"ask","rm *":"deny"}}}`)
	e.record(t, asked("builder", "npm test", false, wire.UserDecision()))
	cfg := filepath.Join(t.TempDir(), "cand.json")
	testkit.WriteFile(t, cfg, []byte(`{"permission":{"*":"ask","bash":{"*":"ask","rm *":"deny"}},"yoloMode":true}`))
	code, out, errOut := runCmd(t, "", e.args("simulate", "--config", cfg)...)
	if code != 1 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	// The candidate stands in for the global config, where its rules are named.
	yolo := "yoloMode true in " + e.global()
	by := strings.SplitN(out, "      by ", 2)
	if len(by) != 2 || !strings.HasPrefix(by[1], `"bash" "*" → ask (global `) || !strings.Contains(strings.SplitN(by[1], "\n", 2)[0], "turned allow by "+yolo) {
		t.Errorf("the change does not name yoloMode as what decides:\n%s", out)
	}
	now := strings.SplitN(out, "; now ", 2)
	if len(now) != 2 || !strings.Contains(strings.SplitN(now[1], "\n", 2)[0], "turned allow by "+yolo) {
		t.Errorf("the loosened verdict does not name yoloMode:\n%s", out)
	}
	_, out, _ = runCmd(t, "", e.args("simulate", "--config", cfg, "--json")...)
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Changed) != 1 || rep.Changed[0].Rule == nil || rep.Changed[0].Rule.Yolo != yolo {
		t.Errorf("--json does not name yoloMode: %v %s", err, out)
	}
}
