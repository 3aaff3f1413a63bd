package serve

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
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

// TestAnAskFromAnotherProjectGoesToAPerson: permtui judges every session it
// serves with one project; an ask from a cwd in another project, whose own
// deny pi's root session there would apply, is not allowed by the global
// policy alone: it goes to a person, says why, and the log warns. Denies
// still deny, and an ask from the project judged is allowed (adversarial
// finding F1, decision 0234).
func TestAnAskFromAnotherProjectGoesToAPerson(t *testing.T) {
	dir := t.TempDir()
	agentDir, a, b := filepath.Join(dir, "agent"), filepath.Join(dir, "A"), filepath.Join(dir, "B")
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"*":"ask","bash":{"*":"ask","git *":"allow","rm *":"deny"}}}`))
	testkit.WriteFile(t, resolve.ProjectConfigPaths(b)[0], []byte(`{"permission":{"bash":{"git push *":"deny"}}}`))
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, ProjectDir: a, TrustProject: true, HoldProjectAllows: true, Home: dir})
	var logged testkit.SyncBuffer
	h := startServer(t, options{config: func(c *Config) {
		c.Judge = func() Judge { return policy }
		c.Logger = slog.New(slog.NewJSONHandler(&logged, nil))
	}})
	from := func(cwd, id, value string) string {
		req := intent(id, "builder", "bash", value)
		req.AccessIntent.RequesterCwd = cwd
		return h.send(req)
	}

	from(b, "1791279012345-fp-1", "git push --force origin main")
	ask := h.queued("1791279012345-fp-1")
	if v := ask.Verdict; v.Action != resolve.Ask || v.OutsideProject != a ||
		!strings.Contains(v.Explanation, "judged without the project at "+strconv.Quote(b)) {
		t.Fatalf("verdict %s, outside %q: %s", v.Action, v.OutsideProject, v.Explanation)
	}
	if want := `"msg":"ask from outside the project judged; its allows go to a person"`; !strings.Contains(logged.String(), want) ||
		!strings.Contains(logged.String(), `"cwd":`+strconv.Quote(b)) {
		t.Errorf("log lacks %s from %s:\n%s", want, b, logged.String())
	}
	from(b, "1791279012345-fp-2", "rm -rf /")
	if r := h.await("1791279012345-fp-2"); r.Approved {
		t.Fatalf("a global deny from another project: %+v", r)
	}
	if err := os.MkdirAll(filepath.Join(a, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	from(filepath.Join(a, "sub"), "1791279012345-fp-3", "git status")
	if r := h.await("1791279012345-fp-3"); !r.Approved {
		t.Fatalf("an allow from inside the project: %+v", r)
	}
}

// TestAnAskFromAProjectBelowTheGuessedOneGoesToAPerson: serving from u2, an
// ask from u2/B, which holds its own .pi denying git push, and one through
// a link that leaves u2, go to a person, while one from a plain
// subdirectory is allowed (verification finding V1, decision 0257).
func TestAnAskFromAProjectBelowTheGuessedOneGoesToAPerson(t *testing.T) {
	dir := t.TempDir()
	agentDir, u2 := filepath.Join(dir, "agent"), filepath.Join(dir, "u2")
	b, plain, link := filepath.Join(u2, "B"), filepath.Join(u2, "A", "src"), filepath.Join(u2, "A", "linkB")
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"*":"ask","bash":{"*":"ask","git *":"allow"}}}`))
	testkit.WriteFile(t, resolve.ProjectConfigPaths(b)[0], []byte(`{"permission":{"bash":{"git push *":"deny"}}}`))
	if err := os.MkdirAll(plain, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, ProjectDir: u2, TrustProject: true, HoldProjectAllows: true, Home: dir})
	h := startServer(t, options{config: func(c *Config) { c.Judge = func() Judge { return policy } }})
	from := func(cwd, id string) string {
		req := intent(id, "builder", "bash", "git push --force origin main")
		req.AccessIntent.RequesterCwd = cwd
		return h.send(req)
	}

	from(b, "1791279012345-fq-1")
	if v := h.queued("1791279012345-fq-1").Verdict; v.Action != resolve.Ask || v.OutsideProject != u2 || v.OwnProject != b ||
		!strings.Contains(v.Explanation, "has its own project ("+strconv.Quote(filepath.Join(b, ".pi"))+")") {
		t.Fatalf("from B: %s, outside %q, own %q: %s", v.Action, v.OutsideProject, v.OwnProject, v.Explanation)
	}
	from(link, "1791279012345-fq-2")
	if v := h.queued("1791279012345-fq-2").Verdict; v.Action != resolve.Ask || v.OutsideProject != u2 {
		t.Fatalf("through a link out of u2: %s, outside %q: %s", v.Action, v.OutsideProject, v.Explanation)
	}
	from(plain, "1791279012345-fq-3")
	if r := h.await("1791279012345-fq-3"); !r.Approved {
		t.Fatalf("from a plain subdirectory: %+v", r)
	}
}
