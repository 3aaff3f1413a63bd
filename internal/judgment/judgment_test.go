package judgment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// TestVerdictSteps: each step of the judgment in its order, on a real policy.
func TestVerdictSteps(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","git *":"allow"}}}`))
	p := resolve.Load(opts)
	git := FactsRequest(resolve.Query{Surface: "bash", Values: []string{"git push"}})
	ls := FactsRequest(resolve.Query{Surface: "bash", Values: []string{"ls"}})
	if v := Verdict(p, git, nil, nil); v.Action != resolve.Allow {
		t.Fatalf("policy allow: %+v", v)
	}
	deny := grants.Deny{Grant: wire.Grant{Surface: "bash", Pattern: "git push*"}, Reason: "no"}
	if v := Verdict(p, git, nil, []grants.Deny{deny}); v.Action != resolve.Deny || v.Origin != resolve.OriginSession || v.Reason != "no" {
		t.Fatalf("a session deny comes first: %+v", v)
	}
	if v := Verdict(p, ls, []wire.Grant{{Surface: "bash", Pattern: "ls"}}, nil); v.Action != resolve.Allow || v.Origin != resolve.OriginSession {
		t.Fatalf("a grant allows: %+v", v)
	}
	if v := Verdict(p, &wire.Request{}, nil, nil); v.Action != resolve.Ask {
		t.Fatalf("no facts: %+v", v)
	}
	// A broken global config floors nothing in pi; the judgment still
	// holds the project's allow.
	testkit.WriteFile(t, resolve.ProjectConfigPaths(opts.ProjectDir)[0], []byte(`{"permission":{"bash":{"git *":"allow"}}}`))
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{`))
	broken := resolve.Load(opts)
	if v := broken.Evaluate(resolve.Query{Surface: "bash", Values: []string{"git push"}}, nil); v.Action != resolve.Allow {
		t.Fatalf("the policy alone: %+v", v)
	}
	if v := Verdict(broken, git, nil, nil); v.Action != resolve.Ask {
		t.Fatalf("a broken file holds the allow: %+v", v)
	}
}

// TestAPolicyPermtuiCannotHoldDeniesEveryAsk: pi reads a global config of
// any size; over the size permtui holds, its denies are missing here, so
// neither an allow nor an ask stands (decision 0177), and the reason names
// the file.
func TestAPolicyPermtuiCannotHoldDeniesEveryAsk(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.ProjectConfigPaths(opts.ProjectDir)[0], []byte(`{"permission":{"bash":{"git *":"allow"}}}`))
	global := resolve.GlobalConfigPath(dir)
	testkit.WriteFile(t, global, []byte(`{"permission":{"bash":{"rm *":"deny"}}}`))
	if err := os.Truncate(global, 64<<20); err != nil {
		t.Fatal(err)
	}
	p := resolve.Load(opts)
	for _, values := range []string{"git push", "rm -rf /", "make"} {
		req := FactsRequest(resolve.Query{Surface: "bash", Values: []string{values}})
		v := Verdict(p, req, []wire.Grant{{Surface: "bash", Pattern: "*"}}, nil)
		if v.Action != resolve.Deny || !strings.Contains(v.Reason, global) {
			t.Errorf("%s with an unheld global config: %s %q", values, v.Action, v.Reason)
		}
	}
	if v := Verdict(p, &wire.Request{}, nil, nil); v.Action != resolve.Deny {
		t.Errorf("no facts with an unheld global config: %s", v.Action)
	}
}

// TestAnAgentFilePermtuiCannotHoldDeniesThatAgentsAsks: an oversized agent
// file is that agent's policy only.
func TestAnAgentFilePermtuiCannotHoldDeniesThatAgentsAsks(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"allow"}}}`))
	big := filepath.Join(dir, "agents", "big.md")
	testkit.WriteFile(t, big, []byte("---\npermission:\n  bash:\n    rm *: deny\n---\n"))
	if err := os.Truncate(big, 64<<20); err != nil {
		t.Fatal(err)
	}
	p := resolve.Load(opts)
	for agent, want := range map[string]resolve.Action{"big": resolve.Deny, "other": resolve.Allow, "": resolve.Allow} {
		req := FactsRequest(resolve.Query{Agent: agent, Surface: "bash", Values: []string{"ls"}})
		// Allows are held while a file is a problem, so "allow" reads ask here.
		got := Verdict(p, req, nil, nil).Action
		if want == resolve.Allow {
			want = resolve.Ask
		}
		if got != want {
			t.Errorf("agent %q: %s, want %s", agent, got, want)
		}
	}
}

// TestAnAgentNameThatIsAPathIsDenied: pi loads agents/<name>.md by joining
// the name, so "team/locked" is agents/team/locked.md ("*": deny here),
// which permtui does not read; it would judge by the base policy (allow).
// Such a name is denied, whatever the policy says; a plain name is not.
func TestAnAgentNameThatIsAPathIsDenied(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"allow"}}}`))
	testkit.WriteFile(t, filepath.Join(dir, "agents", "team", "locked.md"), []byte("---\nname: locked\npermission:\n  \"*\": deny\n---\n"))
	p := resolve.Load(opts)
	for _, agent := range []string{"team/locked", `team\locked`, "../agent/x", "/etc/x"} {
		req := FactsRequest(resolve.Query{Agent: agent, Surface: "bash", Values: []string{"ls"}})
		if v := Verdict(p, req, []wire.Grant{{Surface: "bash", Pattern: "*"}}, nil); v.Action != resolve.Deny || !strings.Contains(v.Reason, "path") {
			t.Errorf("agent %q: %+v", agent, v)
		}
		// Without facts, the requester's own word is enough to deny on.
		if v := Verdict(p, &wire.Request{RequesterAgentName: agent}, nil, nil); v.Action != resolve.Deny {
			t.Errorf("agent %q without facts: %+v", agent, v)
		}
	}
	if v := Verdict(p, FactsRequest(resolve.Query{Agent: "team", Surface: "bash", Values: []string{"ls"}}), nil, nil); v.Action != resolve.Allow {
		t.Errorf("a plain agent name: %+v", v)
	}
}
