package main

import (
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

// rule add and simulate read each policy file once for the policy as it is
// and once for the candidate (the file they edit once: its text as read
// stands in for it), where they loaded the whole policy six and four
// times: on a 40,000-rule config each load costs about 0.3 s
// (docs/performance.md).
func TestRuleAddAndSimulateLoadThePolicyOnce(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"*":"ask","bash":{"git *":"allow"}}}`)
	agent := filepath.Join(e.agentDir, "agents", "a.md")
	testkit.WriteFile(t, agent, []byte("---\nname: a\npermission:\n  bash:\n    \"rm *\": deny\n---\n"))
	for _, c := range []struct {
		args          []string
		global, agent int
	}{
		{[]string{"rule", "add", "--surface", "bash", "--pattern", "make *", "--action", "allow", "--dry-run"}, 1, 2},
		{[]string{"simulate", "--rule", "bash", "make *", "allow"}, 1, 2},
	} {
		opens := testkit.Opens(t, e.global(), agent)
		if code, _, errOut := runCmd(t, "", e.args(c.args...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
		got := opens()
		if got[e.global()] != c.global || got[agent] != c.agent {
			t.Errorf("%s: the global config opened %d times, the agent file %d; want %d and %d", c.args[0], got[e.global()], got[agent], c.global, c.agent)
		}
	}
}
