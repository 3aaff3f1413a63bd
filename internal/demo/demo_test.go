package demo

import (
	"context"
	"io"
	"path/filepath"
	"sync"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/headless"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// TestScriptMatchesTheSamplePolicy serves the demo world headless and checks
// that every scripted child gets the answer its step promises: the demo's
// narration must stay true when the policy or the script changes.
func TestScriptMatchesTheSamplePolicy(t *testing.T) {
	env, srv, ctx, stop := serveDemo(t)
	frontEnd := make(chan error, 1)
	go func() { frontEnd <- headless.Run(ctx, srv, io.Discard, headless.Deny) }()

	var mu sync.Mutex
	var reports []Report
	steps := Script()
	Run(ctx, ctx, env, steps, 0.01, func(r Report) {
		mu.Lock()
		reports = append(reports, r)
		mu.Unlock()
	})
	stop()
	<-frontEnd

	if len(reports) != len(steps) {
		t.Fatalf("%d of %d children reported", len(reports), len(steps))
	}
	for _, r := range reports {
		if r.Err != nil || r.Result.Outcome != pichild.Answered {
			t.Errorf("%s: %v %s", r, r.Err, r.Result.Outcome)
			continue
		}
		resp := r.Result.Response
		by := resp.DecidedBy
		switch r.Step.Policy {
		case AutoApprove:
			if !resp.Approved || by == nil || by.Kind != wire.DecidedByRule {
				t.Errorf("%s: want an approval by rule", r)
			}
		case AutoDeny:
			if resp.Approved || resp.State != wire.StateDeniedWithReason || by == nil || by.Kind != wire.DecidedByRule {
				t.Errorf("%s: want a denial with reason by rule", r)
			}
		case AskPerson:
			if resp.Approved || by == nil || by.Kind != wire.DecidedByUnavailable {
				t.Errorf("%s: want it to reach the (absent) person", r)
			}
		default:
			t.Errorf("%s: step has no expected outcome", r)
		}
	}
}

// serveDemo serves a new demo world in-process as permtui demo does; stop
// ends serving and fails the test on its error.
func serveDemo(t *testing.T) (Env, *serve.Server, context.Context, func()) {
	t.Helper()
	env, err := Setup(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// As permtui demo names them: its sessions and their project.
	policy := resolve.Load(resolve.LoadOptions{AgentDir: env.AgentDir, ProjectDir: env.Project, TrustProject: true, ProjectNamed: true, Home: env.Root})
	if problems := policy.Problems(); len(problems) > 0 {
		t.Fatalf("the sample policy has problems: %+v", problems)
	}
	store, err := grants.Open(filepath.Join(env.StateDir, "grants"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{
		Layout:   wire.NewLayout(env.AgentDir),
		Sessions: env.Sessions,
		StateDir: env.StateDir,
		Judge:    func() serve.Judge { return policy },
		Grants:   store,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	return env, srv, ctx, func() {
		cancel()
		if err := <-served; err != nil && err != context.Canceled {
			t.Fatal(err)
		}
	}
}

// TestAChildAnswersWhatItsOwnGrantCovers: once a person approves the
// implementer's "make test" for this subagent, its child recorded "make test
// *" as pi's does and answers its later "make test …" itself, while another
// child's ask still goes to a person.
func TestAChildAnswersWhatItsOwnGrantCovers(t *testing.T) {
	env, srv, ctx, stop := serveDemo(t)
	defer stop()
	go func() { // the person: "this subagent only" for every ask
		for ev := range srv.Events() {
			if q, ok := ev.(serve.AskQueued); ok {
				if err := srv.Decide(serve.Decision{Ask: q.Ask.ID, Scope: serve.ScopeSubagent}); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	first := make(chan struct{})
	after := func(agent, command string) func(Env) *wire.Request {
		return func(env Env) *wire.Request {
			<-first
			return bashAsk(MainSession, agent, wt42, command)(env)
		}
	}
	steps := []Step{
		{Session: MainSession, Agent: "implementer", Request: bashAsk(MainSession, "implementer", wt42, "make test")},
		{Session: MainSession, Agent: "implementer", Request: after("implementer", "make test -run TestInbox")},
		{Session: MainSession, Agent: "researcher", Request: after("researcher", "make test ./api/...")},
	}
	reports := map[string]Report{}
	var mu sync.Mutex
	Run(ctx, ctx, env, steps, 1, func(r Report) {
		mu.Lock()
		reports[r.Command] = r
		mu.Unlock()
		if r.Command == "make test" {
			close(first)
		}
	})

	if r := reports["make test"]; r.Own != nil || r.Result.Outcome != pichild.Answered || r.Result.Response.State != wire.StateApprovedForSession {
		t.Errorf("the first ask: want it approved for this subagent by the person, got %s", r)
	}
	if r := reports["make test -run TestInbox"]; r.Own == nil || *r.Own != (wire.Grant{Surface: "bash", Pattern: "make test *"}) || r.Result.Outcome != "" {
		t.Errorf("the implementer's later ask: want it answered by its own grant, unforwarded, got %s", r)
	}
	if r := reports["make test ./api/..."]; r.Own != nil || r.Result.Outcome != pichild.Answered {
		t.Errorf("another child's ask: want it forwarded to the person, got %s", r)
	}
}

// A child the demo stopped at its end says so, not Go's "context canceled".
func TestAChildStillWaitingAtTheEndSaysSo(t *testing.T) {
	r := Report{Step: Step{Agent: "scout"}, Command: "make", Err: context.Canceled}
	if got, want := r.String(), "· scout: make → still waiting when the demo ended"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
