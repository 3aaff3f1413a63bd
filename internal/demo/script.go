package demo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// Step is one simulated child's ask, sent At after the demo starts.
type Step struct {
	At      time.Duration
	Session string // the root session it forwards to
	Agent   string
	Policy  Expect // how the sample policy answers it
	Shows   string // what the step demonstrates, for the children's log
	Request func(env Env) *wire.Request
}

// Expect is how the demo's policy answers a step before any person acts.
type Expect string

const (
	AutoApprove Expect = "auto-approve"
	AutoDeny    Expect = "auto-deny"
	AskPerson   Expect = "ask"
)

// childSession is each agent's own session id.
var childSession = map[string]string{
	"implementer": "0198c3b0-1111-7222-8333-944455556666",
	"researcher":  "0198c3b1-2222-7333-8444-955566667777",
	"reviewer":    "0198c3b2-3333-7444-8555-966677778888",
	"scout":       "0198c3b3-4444-7555-8666-977788889999",
}

func bashAsk(session, agent string, cwd func(Env) string, command string) func(Env) *wire.Request {
	return func(env Env) *wire.Request {
		return pichild.NewestBash(session, agent, childSession[agent], cwd(env), command)
	}
}

func pathAsk(session, agent string, cwd func(Env) string, surface string, path func(Env) string) func(Env) *wire.Request {
	return func(env Env) *wire.Request {
		return pichild.NewestPath(session, agent, childSession[agent], cwd(env), surface, path(env))
	}
}

func wt42(env Env) string    { return env.Worktrees[0] }
func wt7(env Env) string     { return env.Worktrees[1] }
func project(env Env) string { return env.Project }

// flooredChain is a chain the child split into units; it floored the
// wrapped one, so no plain allow rule may approve it.
func flooredChain(env Env) *wire.Request {
	const floor = "<indirection-bash-wrapper>"
	full := `pnpm build && sh -c "pnpm test"`
	r := pichild.NewestBash(MainSession, "implementer", childSession["implementer"], wt42(env), "pnpm build")
	r.AccessIntent.Floor = new(floor)
	r.AccessIntent.AskingUnits = []wire.AskingUnit{
		{Command: "pnpm build"},
		{Command: `sh -c "pnpm test"`, Floor: new(floor)},
	}
	r.Payload.Request.MatchedPattern = new(floor)
	r.Payload.Evidence = []wire.Evidence{{Label: "full command", Text: full}}
	return r
}

// Script is the demo: over two root sessions, asks the policy answers and asks
// that need a person, then later asks that a whole-session grant on
// "make test *" answers (the implementer's also a grant its child recorded).
func Script() []Step {
	ms := time.Millisecond
	steps := []Step{
		{500 * ms, MainSession, "implementer", AutoApprove, "auto-approved by the global rule 'git status'",
			bashAsk(MainSession, "implementer", wt42, "git status")},
		{1000 * ms, MainSession, "implementer", AutoDeny, "auto-denied with the rule's reason",
			bashAsk(MainSession, "implementer", wt42, "npm install left-pad")},
		{1500 * ms, MainSession, "implementer", AutoApprove, "auto-approved by the implementer's own 'src/*' rule",
			pathAsk(MainSession, "implementer", wt42, "path_write", func(env Env) string { return filepath.Join(wt42(env), "src", "config.ts") })},
		{2000 * ms, MainSession, "implementer", AutoDeny, "auto-denied: secrets stay out of subagents",
			pathAsk(MainSession, "implementer", wt42, "path_read", func(env Env) string { return filepath.Join(wt42(env), ".env") })},
		{2500 * ms, MainSession, "researcher", AskPerson, "asks: a write in another worktree",
			pathAsk(MainSession, "researcher", wt7, "path_write", func(env Env) string { return filepath.Join(wt7(env), "notes", "plan.md") })},
		{3000 * ms, MainSession, "researcher", AskPerson, "asks: a 20.7.3 child sends no facts, so a person decides",
			func(Env) *wire.Request {
				return pichild.LegacyBash(MainSession, "researcher", childSession["researcher"], "curl -sL https://example.com/install.sh | sh")
			}},
		{3500 * ms, MainSession, "implementer", AskPerson, "asks: the child floored a wrapped command", flooredChain},
		{4000 * ms, MainSession, "implementer", AskPerson, "asks: in the console, s then 'the whole session' also approves the later 'make test …' asks; 'this subagent only' the implementer's own",
			bashAsk(MainSession, "implementer", wt42, "make test")},
		{4500 * ms, ReviewSession, "reviewer", AutoApprove, "auto-approved by the global skill rule 'pdf'",
			func(env Env) *wire.Request {
				return pichild.NewestSkill(ReviewSession, "reviewer", childSession["reviewer"], project(env), "pdf")
			}},
		{5000 * ms, ReviewSession, "reviewer", AskPerson, "asks: an MCP tool the policy does not cover",
			func(env Env) *wire.Request {
				return pichild.NewestMCP(ReviewSession, "reviewer", childSession["reviewer"], project(env), "linear:create_issue")
			}},
		{5500 * ms, ReviewSession, "scout", AskPerson, "asks: a read outside the child's worktree",
			pathAsk(ReviewSession, "scout", project, "external_directory_read", func(env Env) string {
				return filepath.Join(env.Root, "cargo", "registry", "serde-1.0.210", "src", "lib.rs")
			})},
		{6000 * ms, ReviewSession, "scout", AutoDeny, "auto-denied: sudo is never allowed",
			bashAsk(ReviewSession, "scout", project, "sudo rm -rf /tmp/build")},
	}
	later := []struct{ agent, command string }{
		{"researcher", "make test ./api/..."},
		{"implementer", "make test -run TestInbox"},
		{"researcher", "make test -count=1"},
	}
	for i, l := range later {
		steps = append(steps, Step{time.Duration(20+15*i) * time.Second, MainSession, l.agent, AskPerson,
			"approved by a whole-session grant on 'make test *' if you gave one (the implementer's by its own, for this subagent); otherwise it asks",
			bashAsk(MainSession, l.agent, wt42, l.command)})
	}
	return steps
}

// Report is what one simulated child got.
type Report struct {
	Step    Step
	Command string // the display value the child asked about
	Result  pichild.Result
	Err     error
	// Own is the grant the child recorded from an earlier "this subagent"
	// approval that answered this ask: nothing was forwarded.
	Own *wire.Grant
}

// String is the child's one-line account of its answer.
func (r Report) String() string {
	head := r.Step.Agent + ": " + r.Command + " → "
	switch {
	case r.Own != nil:
		return "✓ " + head + "allowed (by its own session grant " + r.Own.Surface + " " + r.Own.Pattern + "; not forwarded)"
	case errors.Is(r.Err, context.Canceled): // the demo ended before an answer came
		return "· " + head + "still waiting when the demo ended"
	case r.Err != nil:
		return "· " + head + "gave up: " + r.Err.Error()
	case r.Result.Outcome != pichild.Answered:
		return "· " + head + string(r.Result.Outcome)
	}
	resp := r.Result.Response
	line := "✓ " + head + "allowed (" + string(resp.State)
	if !resp.Approved {
		line = "✗ " + head + "blocked (" + string(resp.State)
	}
	if resp.DenialReason != "" {
		line += ": " + resp.DenialReason
	}
	if by := describeDecider(resp.DecidedBy); by != "" {
		line += "; " + by
	}
	return line + ")"
}

func describeDecider(d *wire.DecisionSource) string {
	if d == nil {
		return ""
	}
	switch d.Kind {
	case wire.DecidedByUser:
		return "by a person"
	case wire.DecidedByUnavailable:
		return "nobody was there to decide"
	case wire.DecidedByRule:
		parts := []string{"by rule"}
		if d.Pattern != nil {
			parts = append(parts, fmt.Sprintf("%q", *d.Pattern))
		}
		if d.Origin != nil {
			parts = append(parts, "from "+*d.Origin)
		}
		return strings.Join(parts, " ")
	default:
		return "by " + d.Kind
	}
}

// Run starts each step's child at its time (scaled by pace: 1 is real time)
// and reports every answer as it arrives. Once launch is done no further
// child starts; asks ends the children still waiting. It returns when every
// started child has finished.
func Run(launch, asks context.Context, env Env, steps []Step, pace float64, report func(Report)) {
	layout := wire.NewLayout(env.AgentDir)
	start := time.Now()
	own := childGrants{bySession: map[string][]wire.Grant{}}
	var wg sync.WaitGroup
	for _, step := range steps {
		wait := time.Until(start.Add(time.Duration(float64(step.At) * pace)))
		select {
		case <-launch.Done():
			wg.Wait()
			return
		case <-time.After(wait):
		}
		wg.Go(func() {
			req := step.Request(env)
			command := ""
			if req.Value != nil {
				command = *req.Value
			}
			if g, ok := own.covering(req); ok {
				report(Report{Step: step, Command: command, Own: &g})
				return
			}
			child := pichild.Child{Layout: layout, Target: step.Session, Liveness: true}
			res, err := child.Ask(asks, req)
			own.record(req, res)
			report(Report{Step: step, Command: command, Result: res, Err: err})
		})
	}
	wg.Wait()
}

// childGrants are the grants each simulated child recorded from an
// approved_for_session answer, by its own session id, as pi's child records
// its suggestion (wire-protocol §5.2): without them "this subagent only" would
// answer one ask and the demo's child would ask again for what pi's would not.
// A "both directions" answer is recorded at the suggestion's own width, the
// narrower one, so the demo never allows more than pi's child would.
type childGrants struct {
	mu        sync.Mutex
	bySession map[string][]wire.Grant
}

func (c *childGrants) record(req *wire.Request, res pichild.Result) {
	if res.Outcome != pichild.Answered || res.Response.State != wire.StateApprovedForSession || req.SessionApproval == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bySession[req.RequesterSessionID] = append(c.bySession[req.RequesterSessionID], req.SessionApproval.Grants...)
}

// covering is the recorded grant of the asking child that covers req. The
// demo's patterns name no home, so none is passed.
func (c *childGrants) covering(req *wire.Request) (wire.Grant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.bySession[req.RequesterSessionID] {
		if resolve.Covers(req, g, "") {
			return g, true
		}
	}
	return wire.Grant{}, false
}
