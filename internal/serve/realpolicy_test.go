package serve

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// The contract types the lead wires in satisfy the serving loop's interfaces.
var (
	_ Judge      = (*resolve.Policy)(nil)
	_ GrantStore = (*grants.Store)(nil)
)

// TestWithTheRealResolver runs children against the real policy loader,
// evaluator and grant store.
func TestWithTheRealResolver(t *testing.T) {
	agentDir := t.TempDir()
	cfgDir := filepath.Join(agentDir, "extensions", "pi-permission-system")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	config := `{"permission":{"bash":{"git status*":"allow","sudo *":{"action":"deny","reason":"no sudo for subagents"}}}}`
	if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, Home: agentDir})
	if p := policy.Problems(); len(p) != 0 {
		t.Fatalf("policy problems: %+v", p)
	}
	store, err := grants.Open(filepath.Join(t.TempDir(), "grants"))
	if err != nil {
		t.Fatal(err)
	}
	h := startServer(t, options{config: func(c *Config) {
		c.Judge = func() Judge { return policy }
		c.Grants = store
	}})
	ctx := context.Background()

	allow := answered(t, h.ask(ctx, h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "git status --short")))
	if !allow.Approved {
		t.Fatalf("%+v", allow)
	}
	decidedByRule(t, allow.DecidedBy, "bash", "git status*", "global")

	deny := answered(t, h.ask(ctx, h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "sudo rm -rf /tmp/x")))
	if deny.Approved || deny.State != wire.StateDeniedWithReason || deny.DenialReason != "no sudo for subagents" {
		t.Fatalf("%+v", deny)
	}

	// No facts: a person decides even though a rule would allow the command.
	legacy := h.ask(ctx, h.child(false), pichild.LegacyBash(rootID, "impl", "c1", "git status"))
	ask := h.rec.WaitFor(t, "legacy queued", func(ev Event) bool {
		q, ok := ev.(AskQueued)
		return ok && q.Ask.Request.AccessIntent == nil
	}).(AskQueued).Ask
	// The person sees what the policy would say about the legacy text, as a
	// hint only: the verdict stays ask.
	if v := ask.Verdict; v.Action != resolve.Ask || v.Rule != nil || v.Hint == nil || v.Hint.Action != resolve.Allow ||
		v.Hint.Pattern == nil || *v.Hint.Pattern != "git status*" {
		t.Fatalf("legacy verdict %+v, hint %+v", v, v.Hint)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if r := answered(t, legacy); r.Approved {
		t.Fatalf("%+v", r)
	}

	// A whole-session approval lands in the real grant store and covers
	// another agent's identical ask.
	first := h.ask(ctx, h.child(true), pichild.NewestBash(rootID, "implementer", "c1", "/w", "npm test"))
	ask = h.rec.WaitFor(t, "npm queued", func(ev Event) bool {
		q, ok := ev.(AskQueued)
		return ok && q.Ask.Request.RequesterAgentName == "implementer"
	}).(AskQueued).Ask
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession}); err != nil {
		t.Fatal(err)
	}
	if r := answered(t, first); !r.Approved || r.State != wire.StateApproved {
		t.Fatalf("%+v", r)
	}
	other := answered(t, h.ask(ctx, h.child(true), pichild.NewestBash(rootID, "reviewer", "c2", "/w", "npm test --watch")))
	if !other.Approved || other.DecidedBy == nil || other.DecidedBy.Origin == nil || *other.DecidedBy.Origin != "session" {
		t.Fatalf("%+v", other)
	}
}
