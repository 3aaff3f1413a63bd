package serve

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/pichild"
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
		if len(o.Wider) != 2 || o.Wider[0].Grant != req.SessionApproval.Grants[2] || o.Wider[1].Grant != req.SessionApproval.Grants[1] {
			t.Fatalf("%s wider %+v, want the two grants beyond the ask, every surface first", kind, o.Wider)
		}
		all, pw := o.Wider[0], o.Wider[1]
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

// Adversarial pass 2, finding 1: reaches come most severe first (every
// surface, another surface, a deny rule passed, every value, then those
// that only miss the ask), so a front end naming the first ones names the
// widest, and Severe tells the merely missing ones from the rest.
func TestReachesComeMostSevereFirst(t *testing.T) {
	miss := wire.Grant{Surface: "bash", Pattern: "yarn test --shard=1"}
	deny := wire.Grant{Surface: "bash", Pattern: "rm *"}
	every := wire.Grant{Surface: "bash", Pattern: "*"}
	other := wire.Grant{Surface: "path_write", Pattern: "/tmp/x"}
	all := wire.Grant{Surface: "*", Pattern: "*"}
	req := intent("1791279012345-w-5", "builder", "bash", "yarn test --shard=0",
		wire.Grant{Surface: "bash", Pattern: "yarn test --shard=0"}, miss, deny, other, all)
	o, _ := OfferedScopes(req, reachPolicy(t)).Find(ScopeSession)
	var got []wire.Grant
	for _, r := range o.Wider {
		got = append(got, r.Grant)
		if r.Severe() != (r.Grant != miss) {
			t.Errorf("%v: Severe() = %v", r.Grant, r.Severe())
		}
	}
	if want := []wire.Grant{all, other, deny, miss}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}

	req = intent("1791279012345-w-6", "builder", "bash", "yarn test --shard=0",
		wire.Grant{Surface: "bash", Pattern: "yarn test --shard=0"}, miss, every)
	o, _ = OfferedScopes(req, nil).Find(ScopeSession)
	if len(o.Wider) != 2 || o.Wider[0].Grant != every || o.Wider[1].Grant != miss {
		t.Errorf("every value does not come before a miss: %+v", o.Wider)
	}
}

// Adversarial pass 2, finding 9: a pattern for every value, or one that
// begins with a wildcard ("* *": every command with a blank), is named
// "every value" with no deny rule in the policy, or no policy at all.
func TestEveryValueIsNamedWithoutADenyRule(t *testing.T) {
	agentDir := t.TempDir()
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir),
		[]byte(`{"permission":{"*":"ask","bash":{"*":"ask","git status":"allow"}}}`))
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, Home: agentDir})
	for _, judge := range []Judge{policy, nil} {
		for _, p := range []string{"*", "* *", "*test"} {
			req := intent("1791279012345-w-7", "tester", "bash", "npm test", wire.Grant{Surface: "bash", Pattern: p})
			o, ok := OfferedScopes(req, judge).Find(ScopeSession)
			if !ok || len(o.Wider) != 1 || !strings.Contains(o.Wider[0].Value, "every value") || !o.Wider[0].Severe() {
				t.Errorf("policy %v, bash %q: wider %+v", judge != nil, p, o.Wider)
			}
		}
	}
}

// Adversarial pass 2, finding 2: without the asking host's home (a hub
// approver holds no policy), a "~" pattern is named as depending on it and
// counted as reaching beyond the ask, never as merely missing it.
func TestAHomePatternWithoutTheHomeIsNamed(t *testing.T) {
	req := intent("1791279012345-w-8", "builder", "path_write", "/h/ha/notes2.md",
		wire.Grant{Surface: "path_write", Pattern: "/h/ha/notes2.md"}, wire.Grant{Surface: "path_write", Pattern: "~/*"})
	o, _ := OfferedScopes(req, nil).Find(ScopeSession)
	if len(o.Wider) != 1 || !strings.Contains(o.Wider[0].Value, "depends on the asking host's home") || !o.Wider[0].Severe() {
		t.Errorf("~/* without a home reads %+v", o.Wider)
	}
}

// AskedFacts is the ask a legacy child's display fields stand for; a
// request with facts is itself.
func TestAskedFacts(t *testing.T) {
	withFacts := intent("1791279012345-w-9", "builder", "bash", "npm test")
	if AskedFacts(withFacts) != withFacts {
		t.Error("a request with facts is replaced")
	}
	legacy := pichild.LegacyBash(rootID, "builder", "c20", "pnpm legacy")
	ai := AskedFacts(legacy).AccessIntent
	if legacy.AccessIntent != nil || ai == nil || ai.Surface != "bash" || !slices.Equal(ai.MatchValues, []string{"pnpm legacy"}) {
		t.Errorf("legacy facts %+v", ai)
	}
}

// Third adversarial pass: patterns wider than they read are named by what
// they would answer, judged with the policy's own matcher (which joins "~"
// and ".." as pi does): a sensitive value the ask is not ("/etc/passwd",
// "rm -rf /", the home's .ssh); and a bare family on a directional ask
// names the direction it adds, outside the scope that says both directions.
func TestGrantsWiderThanTheyReadAreNamed(t *testing.T) {
	policy := reachPolicy(t)
	home := policy.Options().Home
	write := func(id, value string, g wire.Grant) *wire.Request {
		r := intent(id, "builder", "path_write", value, g)
		r.AccessIntent.BoundaryValue = &value
		return r
	}
	for _, c := range []struct {
		req  *wire.Request
		want string // in the reach's words; "" for none
	}{
		{write("1791279012345-p-1", home+"/notes/a.md", wire.Grant{Surface: "path_write", Pattern: "~/../../../../../*"}), "/etc/passwd"},
		{write("1791279012345-p-2", "/w/p/a.md", wire.Grant{Surface: "path_write", Pattern: "/*"}), "/etc/passwd"},
		{intent("1791279012345-p-3", "builder", "bash", "npm test", wire.Grant{Surface: "bash", Pattern: "?*"}), "rm -rf /"},
		{write("1791279012345-p-4", home+"/notes/a.md", wire.Grant{Surface: "path", Pattern: home + "/notes/*"}), "path_read"},
		{write("1791279012345-p-5", home+"/notes/a.md", wire.Grant{Surface: "path_write", Pattern: "~/*"}), ".ssh"},
		{write("1791279012345-p-6", "/w/p/src/a.ts", wire.Grant{Surface: "path_write", Pattern: "/w/p/src/*"}), ""},
		{intent("1791279012345-p-7", "builder", "bash", "npm run build", wire.Grant{Surface: "bash", Pattern: "npm run build*"}), ""},
	} {
		o, ok := OfferedScopes(c.req, policy).Find(ScopeSession)
		if !ok {
			t.Fatalf("%+v: the whole session not offered", c.req.SessionApproval.Grants)
		}
		words := ""
		for _, r := range o.Wider {
			words += r.Surface + " " + r.Value + ";"
		}
		if c.want == "" && len(o.Wider) != 0 || c.want != "" && (len(o.Wider) != 1 || !o.Wider[0].Severe() || !strings.Contains(words, c.want)) {
			t.Errorf("%+v: reach %q, want one severe naming %q", c.req.SessionApproval.Grants, words, c.want)
		}
	}
	// The scope that says both directions does not name the family again.
	both, _ := OfferedScopes(write("1791279012345-p-8", "/w/p/a.md", wire.Grant{Surface: "path_write", Pattern: "/w/p/*"}), policy).Find(ScopeSessionBoth)
	if len(both.Wider) != 0 {
		t.Errorf("both directions names its own width: %+v", both.Wider)
	}
}
