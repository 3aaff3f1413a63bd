package policyedit

import (
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
)

// A plan reads the file it edits once (its text, the policy as it is and
// the trusted view all take those bytes) and every other policy file once
// for the policy as it is and once for the candidate, where it loaded the
// whole policy four times (six for an untrusted project): on a 40,000-rule
// config each load costs about 0.3 s (docs/performance.md).
func TestAPlanLoadsThePolicyOnce(t *testing.T) {
	files := map[string]string{
		"global":      `{"permission":{"*":"ask","bash":{"git *":"allow"}}}`,
		"agents/a.md": "---\nname: a\npermission:\n  bash:\n    \"rm *\": deny\n---\n",
		"project":     `{"permission":{"bash":{"npm *":"ask"}}}`,
	}
	for _, trusted := range []bool{true, false} {
		e := newEnv(t, files)
		e.opts.TrustProject = trusted
		target, err := Locate(e.opts, ScopeGlobal, "", resolve.Allow)
		if err != nil {
			t.Fatal(err)
		}
		opens := testkit.Opens(t, e.path("global"), e.path("agents/a.md"), e.path("project"))
		if _, err := Plan(e.opts, target, Rule{Surface: "bash", Pattern: "make *", Action: resolve.Allow},
			resolve.Query{Surface: "bash", Values: []string{"make x"}}); err != nil {
			t.Fatal(err)
		}
		got := opens()
		// Untrusted, pi reads the project's files once it is trusted: the
		// plan judges that view too, a policy of its own.
		views := 1
		if !trusted {
			views = 2
		}
		want := map[string]int{e.path("global"): 1, e.path("agents/a.md"): 2 * views, e.path("project"): 2}
		for f, n := range want {
			if got[f] != n {
				t.Errorf("trusted %v: %s opened %d times, want %d (all: %v)", trusted, f, got[f], n, got)
			}
		}
	}
}
