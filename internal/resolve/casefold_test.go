package resolve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

// foldingLstat stands in a case-folding file system (macOS's default) for
// agentLstat: a name finds the entry that differs from it only by case.
func foldingLstat(t *testing.T) {
	t.Helper()
	agentLstat = func(path string) (os.FileInfo, error) {
		dir, base := filepath.Split(path)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.EqualFold(e.Name(), base) {
				base = e.Name()
				break
			}
		}
		return os.Lstat(filepath.Join(dir, base))
	}
	t.Cleanup(func() { agentLstat = os.Lstat })
}

// TestACaseOnlyDifferentAgentNameReadsTheFilePiOpens: pi opens
// agents/<name>.md by path (policy-loader.ts loadScopeConfigFrom), so where
// the file system folds case "Builder" reads builder.md and its deny
// applies; where it does not (here), only the shared policy judges
// "Builder", as pi does. permtui matched names from the listing exactly and
// lost builder's deny on a folding file system (s19 S1; decision 0241).
func TestACaseOnlyDifferentAgentNameReadsTheFilePiOpens(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"ask","bash":{"git *":"allow"}}}`)
	f.agent("builder", "---\npermission:\n  bash:\n    \"git push *\": deny\n---\n")
	testkit.WriteFile(t, filepath.Join(f.opts.AgentDir, "agents", "tester.MD"), []byte("---\npermission:\n  bash: deny\n---\n"))

	// This file system tells case apart: pi reads no file for "Builder".
	p := Load(f.opts)
	if v := p.Evaluate(Query{Agent: "Builder", Surface: "bash", Values: []string{"git push x"}}, nil); v.Action != Allow || !v.AgentWithoutFile {
		t.Errorf("case-sensitive: Builder %s (without file %v), want allow by the shared policy", v.Action, v.AgentWithoutFile)
	}
	if v := p.Evaluate(Query{Agent: "tester", Surface: "bash", Values: []string{"git x"}}, nil); v.Action != Allow {
		t.Errorf("case-sensitive: tester.MD is not tester.md, yet tester got %s", v.Action)
	}

	foldingLstat(t)
	p = Load(f.opts)
	for _, agent := range []string{"builder", "Builder", "BUILDER"} {
		v := p.Evaluate(Query{Agent: agent, Surface: "bash", Values: []string{"git push x"}}, nil)
		if v.Action != Deny || v.AgentWithoutFile {
			t.Errorf("folding: %s %s (without file %v), want builder.md's deny", agent, v.Action, v.AgentWithoutFile)
		}
		if agent != "builder" && !strings.Contains(v.Explanation, `finds agent "builder"'s file for it`) {
			t.Errorf("folding: %s's explanation does not say whose file judged it: %s", agent, v.Explanation)
		}
	}
	if v := p.Evaluate(Query{Agent: "Tester", Surface: "bash", Values: []string{"git x"}}, nil); v.Action != Deny {
		t.Errorf("folding: tester.MD is what pi opens for Tester, yet it got %s", v.Action)
	}
	// A blank is no case: pi opens "builder .md", which is not builder.md.
	if v := p.Evaluate(Query{Agent: "builder ", Surface: "bash", Values: []string{"git push x"}}, nil); v.Action != Allow || !v.AgentWithoutFile {
		t.Errorf("folding: \"builder \" %s, want the shared policy", v.Action)
	}

	// Two names differing only by case in one listing: the file system
	// tells case apart, whatever a lookup says.
	f.agent("BUILDER", "---\n---\n")
	p = Load(f.opts)
	if v := p.Evaluate(Query{Agent: "Builder", Surface: "bash", Values: []string{"git push x"}}, nil); v.Action != Allow || !v.AgentWithoutFile {
		t.Errorf("case twins: Builder %s, want the shared policy", v.Action)
	}
}

// A name with a blank differs from its agent's file name by case alone too:
// pi opens "Builder .md" for "Builder ", which a folding file system finds
// as "builder .md", so that file judges it. foldedAgent took the name that
// resembledAgent found with the blanks trimmed ("builder"), which is not a
// case variant, and judged "Builder " by the shared policy, past the deny.
func TestACaseVariantWithABlankReadsTheFilePiOpens(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"ask","bash":{"git *":"allow"}}}`)
	f.agent("builder ", "---\npermission:\n  bash:\n    \"git push *\": deny\n---\n")
	f.agent("builder", "---\n---\n")
	foldingLstat(t)
	p := Load(f.opts)
	for _, agent := range []string{"builder ", "Builder ", "BUILDER "} {
		if v := p.Evaluate(Query{Agent: agent, Surface: "bash", Values: []string{"git push x"}}, nil); v.Action != Deny || v.AgentWithoutFile {
			t.Errorf("folding: %q %s (without file %v), want \"builder .md\"'s deny", agent, v.Action, v.AgentWithoutFile)
		}
	}
}

// pi opens agents/<name>.md in the user's agent dir and in the project's,
// so where the file system folds case an agent's file in one and its case
// variant in the other are both read: builder.md's deny judges "BUILDER",
// whose own file is the project's BUILDER.md, and "builder" too.
func TestCaseVariantsInTheTwoAgentDirsAreBothRead(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"ask","bash":{"git *":"allow"}}}`)
	f.agent("builder", "---\npermission:\n  bash:\n    \"git push *\": deny\n---\n")
	testkit.WriteFile(t, filepath.Join(f.opts.ProjectDir, ".pi", "agents", "BUILDER.md"),
		[]byte("---\npermission:\n  bash:\n    \"git fetch *\": deny\n---\n"))
	foldingLstat(t)
	p := Load(f.opts)
	for _, agent := range []string{"builder", "Builder", "BUILDER"} {
		for _, value := range []string{"git push x", "git fetch x"} {
			if v := p.Evaluate(Query{Agent: agent, Surface: "bash", Values: []string{value}}, nil); v.Action != Deny {
				t.Errorf("folding: %s %q %s (%s), want the deny of both files pi opens", agent, value, v.Action, v.Explanation)
			}
		}
	}
}
