package serve

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// startWithGrants serves judging with policy, recording whole-session
// grants in a store of its own.
func startWithGrants(t *testing.T, policy Judge) (*harness, *grants.Store) {
	t.Helper()
	store, err := grants.Open(filepath.Join(t.TempDir(), "grants"))
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, options{config: func(c *Config) {
		c.Judge = func() Judge { return policy }
		c.Grants = store
	}}), store
}

// A person's edit of a whole-session grant is recorded only when the real
// resolver, judging the ask with the edited grant, allows it.
func TestEditedSessionGrantMustCoverTheAsk(t *testing.T) {
	h, store := startWithGrants(t, resolve.Load(resolve.LoadOptions{AgentDir: t.TempDir()}))
	child := h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "npm test --watch"))
	ask := h.rec.WaitFor(t, "queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask
	offered, _ := ask.Scopes.Find(ScopeSession)

	for _, bad := range [][]wire.Grant{
		{{Surface: offered.Grants[0].Surface, Pattern: "npm run *"}},        // no longer covers the ask
		{{Surface: "path_read", Pattern: "*"}},                              // another surface
		{{Surface: offered.Grants[0].Surface, Pattern: "  "}},               // no pattern
		{offered.Grants[0], {Surface: "bash", Pattern: "npm test --watch"}}, // one more
	} {
		err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession, Grants: bad})
		if !errors.Is(err, ErrInvalidDecision) {
			t.Fatalf("edit %v: err = %v", bad, err)
		}
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSubagent, Grants: offered.Grants}); !errors.Is(err, ErrInvalidDecision) {
		t.Fatalf("edited subagent grant: %v", err)
	}
	narrow := []wire.Grant{{Surface: offered.Grants[0].Surface, Pattern: "npm test --watch"}}
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession, Grants: narrow}); err != nil {
		t.Fatal(err)
	}
	if r := answered(t, child); !r.Approved {
		t.Fatalf("%+v", r)
	}
	if got := store.For(rootID); !reflect.DeepEqual(got, narrow) {
		t.Fatalf("recorded %v, want the edit %v", got, narrow)
	}
}

// A whole-session choice made after the policy changed is refused when what
// its grants reach is no longer what the ask's scopes named (a deny rule
// added since, which the grant would pass unnamed); the ask stays for the
// person (review finding). The subagent choice is refused the same way
// (decision 0229).
func TestAWholeSessionChoiceIsRefusedWhenItsReachChanged(t *testing.T) {
	agentDir := t.TempDir()
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask"}}}`))
	var mu sync.Mutex
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir})
	store, err := grants.Open(filepath.Join(t.TempDir(), "grants"))
	if err != nil {
		t.Fatal(err)
	}
	h := startServer(t, options{config: func(c *Config) {
		c.Judge = func() Judge { mu.Lock(); defer mu.Unlock(); return policy }
		c.Grants = store
	}})
	h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "npm test --watch"))
	ask := h.rec.WaitFor(t, "queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask
	if _, ok := ask.Scopes.Find(ScopeSession); !ok {
		t.Fatal("the whole session is not offered")
	}
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask","npm test --force*":"deny"}}}`))
	mu.Lock()
	policy = resolve.Load(resolve.LoadOptions{AgentDir: agentDir})
	mu.Unlock()
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession}); !errors.Is(err, ErrScopesChanged) {
		t.Fatalf("a whole-session choice whose reach changed: err = %v", err)
	}
	// "This subagent" records the same grants in the child (s19 F6).
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSubagent}); !errors.Is(err, ErrScopesChanged) {
		t.Fatalf("a subagent choice whose reach changed: err = %v", err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
}

// s19 F6: a reload that changes what an open ask's scopes reach sends the
// scopes judged again (ScopesChanged, the next Rev), so a console shows the
// current warnings; a choice made from the scopes shown before (their Rev)
// is refused even once serve holds the new ones, and one made from the new
// ones is recorded (decision 0229).
func TestAReloadSendsTheScopesJudgedAgain(t *testing.T) {
	agentDir := t.TempDir()
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask"}}}`))
	store := resolve.NewStore(resolve.LoadOptions{AgentDir: agentDir})
	h := startServer(t, options{config: func(c *Config) {
		c.Judge = func() Judge { return store.Policy() }
	}})
	h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "npm test --watch"))
	ask := h.rec.WaitFor(t, "queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask
	shown, _ := ask.Scopes.Find(ScopeSubagent)

	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask","npm test --force*":"deny"}}}`))
	store.Reload()
	h.s.PolicyLoaded(PolicyStatus{})
	changed := h.rec.WaitFor(t, "scopes judged again", func(ev Event) bool { _, ok := ev.(ScopesChanged); return ok }).(ScopesChanged)
	now, _ := changed.Scopes.Find(ScopeSubagent)
	if changed.Ask != ask.ID || changed.Scopes.Rev != ask.Scopes.Rev+1 || reflect.DeepEqual(now.Wider, shown.Wider) {
		t.Fatalf("scopes judged again: %+v, shown %+v", changed, ask.Scopes)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSubagent, ScopesRev: ask.Scopes.Rev}); !errors.Is(err, ErrScopesChanged) {
		t.Fatalf("a choice from the scopes shown before: err = %v", err)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSubagent, ScopesRev: changed.Scopes.Rev}); err != nil {
		t.Fatal(err)
	}
}

// s19 V2: an edited whole-session grant that passes a deny rule is
// recorded only when the decision says the person was shown that rule
// (EditDenies, decision 0259): a crafted decision or a console that named
// nothing is refused and the ask stays for the person.
func TestAnEditedGrantPastADenyNeedsTheDenyShown(t *testing.T) {
	agentDir := t.TempDir()
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask","rm *":"deny"}}}`))
	h, store := startWithGrants(t, resolve.Load(resolve.LoadOptions{AgentDir: agentDir}))
	child := h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "ls -la"))
	ask := h.rec.WaitFor(t, "queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask
	if _, ok := ask.Scopes.Find(ScopeSession); !ok {
		t.Fatal("the whole session is not offered")
	}
	edit := []wire.Grant{{Surface: "bash", Pattern: "*"}}
	reach, ok := h.s.EditReach(ask.ID, ScopeSession, edit)
	if !ok || len(reach) != 1 || len(reach[0].Denies) != 1 || reach[0].Denies[0].Rule.Pattern != "rm *" {
		t.Fatalf("the edit's reach: %+v, %v", reach, ok)
	}
	for _, shown := range [][]wire.Grant{nil, {{Surface: "bash", Pattern: "git push *"}}} {
		err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession, Grants: edit, EditDenies: shown})
		if !errors.Is(err, ErrInvalidDecision) || !strings.Contains(err.Error(), "bash rm *") {
			t.Fatalf("shown %v: err = %v", shown, err)
		}
	}
	if got := store.For(rootID); len(got) != 0 {
		t.Fatalf("recorded %v for a refused edit", got)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession, Grants: edit, EditDenies: ShownDenies(reach)}); err != nil {
		t.Fatal(err)
	}
	if r := answered(t, child); !r.Approved {
		t.Fatalf("%+v", r)
	}
	if got := store.For(rootID); !reflect.DeepEqual(got, edit) {
		t.Fatalf("recorded %v, want the edit %v", got, edit)
	}
}
