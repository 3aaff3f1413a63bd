package serve

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/policyedit"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
)

// TestAWrittenRuleAnswersTheWaitingAsk: a rule written with policyedit (what
// rule add and the console's R do) reaches the serving loop through the
// policy reload, and the ask that waited for a person is answered by it.
func TestAWrittenRuleAnswersTheWaitingAsk(t *testing.T) {
	agentDir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: agentDir, Home: agentDir}
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte("{\n  // ours\n  \"permission\": {\"bash\": {\"*\": \"ask\"}}\n}\n"))
	store := resolve.NewStore(opts)
	h := startServer(t, options{config: func(c *Config) { c.Judge = func() Judge { return store.Policy() } }})
	ctx := context.Background()

	waiting := h.ask(ctx, h.child(true), pichild.NewestBash(rootID, "builder", "c1", "/w", "npm install left-pad"))
	ask := h.rec.WaitFor(t, "npm queued", func(ev Event) bool { _, ok := ev.(AskQueued); return ok }).(AskQueued).Ask

	target, err := policyedit.Locate(opts, policyedit.ScopeGlobal, "", resolve.Allow)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := policyedit.Plan(opts, target, policyedit.Rule{Surface: "bash", Pattern: "npm install *", Action: resolve.Allow},
		factsQuery(ask))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policyedit.Apply(ch, opts, filepath.Join(t.TempDir(), "state"), time.Now()); err != nil {
		t.Fatal(err)
	}
	store.Reload() // what the fsnotify watch does on the rename
	h.s.PolicyLoaded(PolicyStatus{})

	r := answered(t, waiting)
	if !r.Approved {
		t.Fatalf("%+v", r)
	}
	decidedByRule(t, r.DecidedBy, "bash", "npm install *", "global")
}

func factsQuery(a Ask) resolve.Query {
	in := a.Request.AccessIntent
	return resolve.Query{Agent: in.Principal.AgentName, Surface: in.Surface, Values: in.MatchValues}
}
