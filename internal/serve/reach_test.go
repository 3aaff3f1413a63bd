package serve

import (
	"errors"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// reachPolicy is the adversarial tester's global policy (F1).
func reachPolicy(t *testing.T) *resolve.Policy {
	t.Helper()
	agentDir := t.TempDir()
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir),
		[]byte(`{"permission":{"*":"ask","bash":{"*":"ask","git status":"allow","rm -rf *":"deny"}}}`))
	return resolve.Load(resolve.LoadOptions{AgentDir: agentDir, Home: agentDir})
}

// F1: a child's suggestion wider than its ask (another surface, every
// surface, every value, past a deny rule) is named grant by grant for the
// whole session and for the subagent; one that covers only the ask is not.
func TestAWiderSuggestionIsNamed(t *testing.T) {
	policy := reachPolicy(t)
	req := intent("1791279012345-w-1", "builder", "bash", "npm test",
		wire.Grant{Surface: "bash", Pattern: "npm test"},
		wire.Grant{Surface: "path_write", Pattern: "*"},
		wire.Grant{Surface: "*", Pattern: "*"})
	scopes := OfferedScopes(req, policy)
	for _, kind := range []ScopeKind{ScopeSubagent, ScopeSession} {
		o, ok := scopes.Find(kind)
		if !ok {
			t.Fatalf("%s not offered", kind)
		}
		if len(o.Wider) != 2 || o.Wider[0].Grant != req.SessionApproval.Grants[1] || o.Wider[1].Grant != req.SessionApproval.Grants[2] {
			t.Fatalf("%s wider %+v, want the two grants beyond the ask", kind, o.Wider)
		}
		pw, all := o.Wider[0], o.Wider[1]
		if !strings.Contains(pw.Surface, "another surface than this ask's bash") || !strings.Contains(pw.Value, "every value") {
			t.Errorf("path_write * reads %+v", pw)
		}
		if !strings.Contains(all.Surface, "every surface") || !strings.Contains(all.Value, "every value") ||
			len(all.Denies) != 1 || all.Denies[0].Rule.Pattern != "rm -rf *" || !all.Denies[0].Sure {
			t.Errorf("* * reads %+v", all)
		}
	}

	narrow := intent("1791279012345-w-2", "builder", "bash", "npm test", wire.Grant{Surface: "bash", Pattern: "npm test *"})
	for _, o := range OfferedScopes(narrow, policy).Options {
		if len(o.Wider) != 0 {
			t.Errorf("%s: a suggestion covering only the ask is called wider: %+v", o.Kind, o.Wider)
		}
	}

	elsewhere := intent("1791279012345-w-3", "builder", "bash", "npm test", wire.Grant{Surface: "bash", Pattern: "curl *"})
	o, _ := OfferedScopes(elsewhere, policy).Find(ScopeSubagent)
	if len(o.Wider) != 1 || !strings.Contains(o.Wider[0].Value, "does not match this ask") {
		t.Errorf("a pattern that misses the ask reads %+v", o.Wider)
	}
}

// Decision 0189: a whole-session grant none of whose grants covers the ask
// is not offered (nobody saw it work), and serve refuses it.
func TestASuggestionThatMissesTheAskIsNotOfferedForTheSession(t *testing.T) {
	h := startServer(t, options{})
	req := intent("1791279012345-w-4", "builder", "bash", "npm test", wire.Grant{Surface: "path_write", Pattern: "*"})
	h.send(req)
	ask := h.queued(req.ID)
	if _, ok := ask.Scopes.Find(ScopeSession); ok {
		t.Fatalf("whole session offered: %+v", ask.Scopes)
	}
	if !strings.Contains(ask.Scopes.Note, "none of the child's suggested grants covers this ask") {
		t.Fatalf("note %q", ask.Scopes.Note)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSession}); !errors.Is(err, ErrInvalidDecision) {
		t.Fatalf("Decide = %v, want ErrInvalidDecision", err)
	}
}
