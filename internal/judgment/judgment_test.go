package judgment

import (
	"path/filepath"
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
