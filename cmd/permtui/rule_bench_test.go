package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/policyedit"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
)

// BenchmarkRulePlan is one plan of 'permtui rule add' (the console's R
// makes the same; rule add makes two, the second under the lock) on a
// global config.json of 40,000 rules: 100 bash rules and one rule each
// for 39,900 tools, 629 KB (docs/performance.md).
func BenchmarkRulePlan(b *testing.B) {
	bash := make([]string, 100)
	for i := range bash {
		bash[i] = fmt.Sprintf(`"cmd%d *":%q`, i, []string{"allow", "ask", "deny"}[i%3])
	}
	rules := []string{`"*":"ask"`, `"bash":{` + strings.Join(bash, ",") + `}`}
	for i := range 39_900 {
		rules = append(rules, fmt.Sprintf(`"t%d":%q`, i, []string{"allow", "ask", "deny"}[i%3]))
	}
	root := b.TempDir()
	agentDir := filepath.Join(root, "agent")
	testkit.WriteFile(b, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{`+strings.Join(rules, ",")+`}}`))
	svc := ruleService{stateDir: filepath.Join(root, "state"),
		opts: resolve.LoadOptions{AgentDir: agentDir, ProjectDir: filepath.Join(root, "proj"), TrustProject: true, Home: root}}
	r := policyedit.Rule{Surface: "bash", Pattern: "make *", Action: resolve.Allow}
	facts := resolve.Query{Surface: "bash", Values: []string{"make x"}}
	for b.Loop() {
		if _, err := svc.plan(policyedit.ScopeGlobal, "", r, facts, nil); err != nil {
			b.Fatal(err)
		}
	}
}
