package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/ui"
)

// TestAnAgentAllowGoesToTheUsersFileWhileTheProjectIsNotTrusted: with the
// project's allows held (no --trust-project, decision 0206), an allow for
// "this agent" goes to the person's own agent file, where serve honours it,
// not to the project's (a repository file, whose allow serve holds): s19 F7
// wrote it to proj/.pi/agents/builder.md. A deny or ask still goes to the
// file pi reads last, whose denies and asks apply; --trust-project sends an
// allow there too. With only the project's file, an allow is refused and
// the refusal names --trust-project. The console's R plans the same way.
func TestAnAgentAllowGoesToTheUsersFileWhileTheProjectIsNotTrusted(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"*":"ask"}}`)
	users := filepath.Join(e.agentDir, "agents", "builder.md")
	projects := filepath.Join(e.project, ".pi", "agents", "builder.md")
	testkit.WriteFile(t, users, []byte("---\nname: builder\n---\n"))
	testkit.WriteFile(t, projects, []byte("---\nname: builder\n---\n"))
	add := func(action string, extra ...string) (int, string, string) {
		args := append([]string{"rule", "add", "--scope", "agent", "--agent", "builder", "--surface", "bash", "--pattern", "npm ci", "--action", action, "--dry-run"}, extra...)
		return runCmd(t, "", e.args(args...)...)
	}
	for _, c := range []struct {
		action string
		extra  []string
		file   string
	}{
		{"allow", nil, users + " (agent scope)"},
		{"deny", nil, projects + " (project-agent scope)"},
		{"ask", nil, projects + " (project-agent scope)"},
		{"allow", []string{"--trust-project"}, projects + " (project-agent scope)"},
	} {
		code, out, errOut := add(c.action, c.extra...)
		if code != 0 || !strings.Contains(out, "file   "+c.file) || strings.Contains(out, "serve holds") {
			t.Errorf("%s %v: exit %d, want file %s:\n%s%s", c.action, c.extra, code, c.file, out, errOut)
		}
	}
	c := consoleRules{ruleService{opts: resolve.LoadOptions{AgentDir: e.agentDir, ProjectDir: e.project, TrustProject: true, HoldProjectAllows: true}, stateDir: e.state}}
	facts := resolve.Query{Agent: "builder", Surface: "bash", Values: []string{"npm ci"}}
	if p := c.PreviewRule(ui.RuleDraft{Scope: "agent", Agent: "builder", Surface: "bash", Pattern: "npm ci", Action: resolve.Allow, Facts: facts}); p.Refused != "" || p.File != users {
		t.Errorf("console R: file %q refused %q, want %s", p.File, p.Refused, users)
	}

	// Only the project's file: an allow has no file of the person's to go to.
	if err := os.Remove(users); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := add("allow")
	if code == 0 || !strings.Contains(errOut, "--trust-project") || !strings.Contains(errOut, users) {
		t.Errorf("allow with only the project's file: exit %d, want a refusal naming --trust-project and %s:\n%s%s", code, users, out, errOut)
	}
	if code, out, _ := add("deny"); code != 0 || !strings.Contains(out, "file   "+projects) {
		t.Errorf("deny with only the project's file: exit %d:\n%s", code, out)
	}
}
