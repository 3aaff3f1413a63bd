package relay

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// withPolicy restarts tr judging with policy as its global config.
func (tr *testRelay) withPolicy(th hubAt, policy string) {
	tr.t.Helper()
	tr.stop()
	testkit.WriteFile(tr.t, resolve.GlobalConfigPath(tr.agentDir), []byte(policy))
	tr.start(th)
}

// reload makes policy tr's global config while it runs, as a watched
// file's change does.
func (tr *testRelay) reload(policy string) {
	tr.loadPolicy(policy)
	tr.srv.PolicyLoaded(serve.PolicyStatus{})
}

// loadPolicy puts policy in force on tr, as the first half of a reload:
// its server has not judged the scopes of the waiting asks again.
func (tr *testRelay) loadPolicy(policy string) {
	testkit.WriteFile(tr.t, resolve.GlobalConfigPath(tr.agentDir), []byte(policy))
	tr.policy.Store(resolve.Load(resolve.LoadOptions{AgentDir: tr.agentDir, Home: tr.agentDir}))
}

// choiceRacingAReload has ta choose the whole session for a once tr's
// policy denies npm publish *, before its server judged a's scopes again,
// and waits until the server refused the choice (decision 0272).
func choiceRacingAReload(t *testing.T, tr *testRelay, ta *testApprover, a serve.Ask) {
	t.Helper()
	tr.loadPolicy(`{"permission":{"bash":{"*":"ask","npm publish *":"deny"}}}`)
	if err := ta.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	tr.logs.WaitFor(t, "the choice refused", func(m string) bool { return strings.HasPrefix(m, "hub decision refused") })
}

// gitFetch asks git fetch origin with the suggestion bash git *.
func gitFetch(host string, i int, command, pattern string) *wire.Request {
	r := bash(host, i, command)
	r.SessionApproval.Grants = []wire.Grant{{Surface: "bash", Pattern: pattern}}
	return r
}

// passes reports whether a scope of kind names a grant passing the deny
// rule pattern.
func passes(a serve.Ask, kind serve.ScopeKind, pattern string) bool {
	o, _ := a.Scopes.Find(kind)
	return slices.ContainsFunc(o.Wider, func(r serve.Reach) bool {
		return r.Severe() && slices.ContainsFunc(r.Denies, func(d resolve.PassedDeny) bool { return d.Rule.Pattern == pattern })
	})
}

// Adversarial pass adv2, F4: a hub console was offered the whole session
// for bash git * with no word of the deny rule git push * it passes on
// the asking host. The relay judged that reach; its ask now carries it, so
// the console names it as a local one does (decision 0246).
func TestAHubAskNamesTheDenyRulesItsGrantsPass(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	alpha.withPolicy(th, `{"permission":{"bash":{"*":"ask","git push *":"deny"}}}`)
	ann := newApprover(t, th, "ann")

	alpha.ask(gitFetch("alpha", 1, "git fetch origin", "git *"))
	a := ann.queued(t, "alpha-1")
	for _, kind := range []serve.ScopeKind{serve.ScopeSubagent, serve.ScopeSession} {
		if !passes(a, kind, "git push *") {
			t.Errorf("%s does not name the deny rule git push *: %+v", kind, a.Scopes)
		}
	}
	if a.Scopes.NoPolicy {
		t.Error("the relay's scopes are taken as judged without a policy")
	}
}

// F4's variant: ann chose the whole session for npm * while the relay was
// down; meanwhile the policy denied npm publish *. The relay back judges
// the ask anew, its grant now passing that deny nobody saw named: ann's
// decision must not answer it, and the ask is shown again with the deny
// named (decision 0246).
func TestAHubChoiceMadeOnAnOlderReachIsNotRecorded(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	child := alpha.ask(gitFetch("alpha", 1, "npm ci", "npm *"))
	old := ann.queued(t, "alpha-1")
	if passes(old, serve.ScopeSession, "npm publish *") {
		t.Fatal("a deny is named before the policy has it")
	}
	alpha.stop()
	if err := ann.decide(t, serve.Decision{Ask: old.ID, Scope: serve.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	alpha.withPolicy(th, `{"permission":{"bash":{"*":"ask","npm publish *":"deny"}}}`)

	again := ann.events.WaitFor(t, "alpha-1 shown again", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == "alpha-1" && q.Ask.ID != old.ID
	}).(serve.AskQueued).Ask
	if !passes(again, serve.ScopeSession, "npm publish *") {
		t.Fatalf("the ask shown again does not name the deny: %+v", again.Scopes)
	}
	if err := ann.decide(t, serve.Decision{Ask: again.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, child); resp.Approved {
		t.Fatalf("approved on the reach named before: %+v", resp)
	}
	for _, rec := range alpha.audit() {
		if len(rec.Grants) > 0 || rec.State != wire.StateDenied {
			t.Errorf("audit %+v", rec)
		}
	}
}

// Each scope repeats the suggestion, so an ask the hub carries may be too
// large with its scopes: it is sent offering none, and a scope chosen for
// it anyway (no console offers one) is refused, the ask asked again.
func TestAnAskTooLargeWithItsScopesOffersNone(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	req := bigBash(t, "alpha", 1, 760<<10) // with its suggestion, just under a file's limit
	req.SessionApproval.Grants = []wire.Grant{{Surface: "bash", Pattern: *req.Value}}
	c := alpha.ask(req)
	a := ann.queued(t, "alpha-1")
	if len(a.Scopes.Options) != 0 || a.Scopes.Note != noScopesSent {
		t.Fatalf("%d scopes offered, note %q", len(a.Scopes.Options), a.Scopes.Note)
	}
	if err := ann.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	a = askedAgain(t, ann, a, "was not offered at the hub")
	if err := ann.decide(t, serve.Decision{Ask: a.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, c); resp.Approved || resp.State != wire.StateDenied {
		t.Fatalf("%+v", resp)
	}
}

// rejudged waits until ta shows old's request again, its whole session
// naming the deny rule pattern, and checks that old was withdrawn as
// judged again; it returns the ask shown again.
func rejudged(t *testing.T, ta *testApprover, old serve.Ask, pattern string) serve.Ask {
	t.Helper()
	again := ta.events.WaitFor(t, old.Request.ID+" shown again", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == old.Request.ID && q.Ask.ID != old.ID
	}).(serve.AskQueued).Ask
	if !passes(again, serve.ScopeSession, pattern) {
		t.Fatalf("the ask shown again does not name the deny: %+v", again.Scopes)
	}
	if ta.events.Count(func(ev serve.Event) bool { w, ok := ev.(serve.Withdrawn); return ok && w.ID == old.ID && w.Rejudged }) != 1 {
		t.Error("the copy shown before was not withdrawn as judged again")
	}
	return again
}

// sessionChosen has ta choose the whole session for a and checks that the
// child is approved and tr's one record is that choice, ann's.
func sessionChosen(t *testing.T, tr *testRelay, ta *testApprover, a serve.Ask, child <-chan pichild.Result) {
	t.Helper()
	if err := ta.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	sessionChosenAt(t, tr, child)
}

// A reload while the ask waits at the hub that changes what its grants
// reach: the hub's copy is withdrawn and the ask shown again naming the
// new reach; the copy shown before can no longer be decided, and a choice
// made from the new one is recorded (decision 0246).
func TestAReloadThatChangesAnAsksReachShowsItAgain(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	child := alpha.ask(gitFetch("alpha", 1, "npm ci", "npm *"))
	old := ann.queued(t, "alpha-1")
	alpha.reload(`{"permission":{"bash":{"*":"ask","npm publish *":"deny"}}}`)
	again := rejudged(t, ann, old, "npm publish *")
	if err := ann.decide(t, serve.Decision{Ask: old.ID, Scope: serve.ScopeSession}); !errors.Is(err, serve.ErrUnknownAsk) {
		t.Fatalf("the copy shown before: %v", err)
	}
	sessionChosen(t, alpha, ann, again, child)
}

// s19 V2: a hub console, holding no policy, edits git fetch * to git *,
// which passes the relay's deny rule git push * nobody named. The relay's
// server refuses the edit (decision 0259); the child is not denied for it:
// the copy decided on is let go of, naming the refusal, and the ask is
// shown again (decision 0273), where naming the rule as shown records the
// edit.
func TestAHubEditPastAnUnnamedDenyIsAskedAgain(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	alpha.withPolicy(th, `{"permission":{"bash":{"*":"ask","git push *":"deny"}}}`)
	ann := newApprover(t, th, "ann")
	edit := []wire.Grant{{Surface: "bash", Pattern: "git *"}}

	child := alpha.ask(gitFetch("alpha", 1, "git fetch origin", "git fetch *"))
	a := ann.queued(t, "alpha-1")
	if err := ann.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession, Grants: edit}); err != nil {
		t.Fatal(err)
	}
	again := askedAgain(t, ann, a, "passes the deny rule bash git push *")
	select {
	case res := <-child:
		t.Fatalf("the child was answered: %+v", res.Response)
	default:
	}
	shown := []wire.Grant{{Surface: "bash", Pattern: "git push *"}}
	if err := ann.decide(t, serve.Decision{Ask: again.ID, Scope: serve.ScopeSession, Grants: edit, EditDenies: shown}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, child); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if recs := alpha.audit(); len(recs) != 1 || !slices.Equal(recs[0].Grants, edit) || recs[0].Approver != "ann" {
		t.Fatalf("audit %+v", recs)
	}
}

// askedAgain waits until ta lets go of a as refused by its relay, the
// reason naming refusal, and shows its request again; it returns the ask
// shown again.
func askedAgain(t *testing.T, ta *testApprover, a serve.Ask, refusal string) serve.Ask {
	t.Helper()
	w := ta.events.WaitFor(t, "the refused copy let go of", func(ev serve.Event) bool {
		w, ok := ev.(serve.Withdrawn)
		return ok && w.ID == a.ID
	}).(serve.Withdrawn)
	if !strings.Contains(w.Why, "was refused by its relay") || !strings.Contains(w.Why, refusal) {
		t.Errorf("let go of saying %q", w.Why)
	}
	return ta.events.WaitFor(t, a.Request.ID+" shown again", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == a.Request.ID && q.Ask.ID > a.ID
	}).(serve.AskQueued).Ask
}

// refusedEdit has ta edit a's whole session to make *, which does not
// cover it, and returns the ask shown again once its relay refused that.
func refusedEdit(t *testing.T, ta *testApprover, a serve.Ask) serve.Ask {
	t.Helper()
	wrong := []wire.Grant{{Surface: "bash", Pattern: "make *"}}
	if err := ta.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession, Grants: wrong}); err != nil {
		t.Fatal(err)
	}
	return askedAgain(t, ta, a, "does not cover this ask")
}

// The refused decision stays with its ask: a relay started again meets it
// again, asks again under the same name, and the decision made on the copy
// shown again answers the child (decision 0273).
func TestAnAskAskedAgainStaysDecidableAcrossARelayRestart(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	child := alpha.ask(gitFetch("alpha", 1, "npm ci", "npm *"))
	again := refusedEdit(t, ann, ann.queued(t, "alpha-1"))
	alpha.stop()
	alpha.start(th)
	ann.approves(t, again.ID, child)
	if recs := alpha.audit(); len(recs) != 1 || recs[0].State != wire.StateApproved || recs[0].Approver != "ann" {
		t.Fatalf("audit %+v", recs)
	}
}

// A hub scope choice that races a reload on its relay: the relay's server
// took the new policy (its grants now pass npm publish *) before the relay
// sent the ask again, and ann chose the whole session from the copy shown
// before. serve refuses it as made on older scopes; the relay must not deny
// the ask for it (nobody did), but leave it open and show it again with the
// new reach once its server judged the scopes again (decision 0272).
func TestAHubChoiceRacingAReloadIsAskedAgain(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	child := alpha.ask(gitFetch("alpha", 1, "npm ci", "npm *"))
	old := ann.queued(t, "alpha-1")
	choiceRacingAReload(t, alpha, ann, old)
	select {
	case res := <-child:
		t.Fatalf("the child was answered: %+v", res.Response)
	default:
	}
	alpha.srv.PolicyLoaded(serve.PolicyStatus{})
	again := rejudged(t, ann, old, "npm publish *")
	sessionChosen(t, alpha, ann, again, child)
}

// plainPolicy asks for every bash command and denies none.
const plainPolicy = `{"permission":{"bash":{"*":"ask"}}}`

// askedUnderAPlainPolicy starts a hub, relay alpha judging with
// plainPolicy and approver ann; a child there asks npm ci, suggesting
// npm *. It returns ann's first copy of the ask.
func askedUnderAPlainPolicy(t *testing.T) (*testRelay, *testApprover, <-chan pichild.Result, serve.Ask) {
	t.Helper()
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	alpha.withPolicy(th, plainPolicy)
	ann := newApprover(t, th, "ann")
	child := alpha.ask(gitFetch("alpha", 1, "npm ci", "npm *"))
	return alpha, ann, child, ann.queued(t, "alpha-1")
}

// Adversarial pass s21: a reload that changes an ask's reach, undone by
// the next (a deny rule added and taken out again, a policy file saved
// with a mistake and then mended), brings the ask back to the name it was
// first sent under. The relay sent it there again with the message id of
// its first send, which the hub dropped as a duplicate for two minutes:
// consoles, which had let go of that name, never showed the ask again,
// and nobody could answer the child.
func TestAReloadUndoneShowsTheAskAgain(t *testing.T) {
	alpha, ann, child, first := askedUnderAPlainPolicy(t)
	alpha.reload(`{"permission":{"bash":{"*":"ask","npm publish *":"deny"}}}`)
	second := rejudged(t, ann, first, "npm publish *")
	alpha.reload(plainPolicy)
	third := ann.events.WaitFor(t, "alpha-1 shown a third time", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == "alpha-1" && q.Ask.ID > second.ID
	}).(serve.AskQueued).Ask
	if passes(third, serve.ScopeSession, "npm publish *") {
		t.Fatalf("the deny taken out is still named: %+v", third.Scopes)
	}
	sessionChosen(t, alpha, ann, third, child)
}

// The same pass: ann chose the whole session on the copy a reload then
// let go of (the choice raced the reload, decision 0272). Her choice,
// offered again after the copy went, was acked unused; the reload undone,
// the ask was back under the name whose one decision she had taken, and
// nobody could decide it. Her choice is now kept with the ask, and once
// the ask is sent under that name again it is judged on the reach she was
// shown, which is again the one in force.
func TestAChoiceOnACopyAnUndoneReloadLetGoOfAnswersIt(t *testing.T) {
	alpha, ann, child, first := askedUnderAPlainPolicy(t)
	choiceRacingAReload(t, alpha, ann, first)
	alpha.srv.PolicyLoaded(serve.PolicyStatus{})
	rejudged(t, ann, first, "npm publish *")
	alpha.logs.WaitFor(t, "the choice kept with its ask", func(m string) bool { return strings.HasPrefix(m, "hub decision for a name its ask had before") })
	alpha.reload(plainPolicy)
	sessionChosenAt(t, alpha, child)
}

// sessionChosenAt checks that the child is approved and tr's one record is
// ann's choice of the whole session.
func sessionChosenAt(t *testing.T, tr *testRelay, child <-chan pichild.Result) {
	t.Helper()
	if resp := answered(t, child); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if recs := tr.audit(); len(recs) != 1 || recs[0].State != wire.StateApprovedForServingSession || recs[0].Approver != "ann" {
		t.Fatalf("audit %+v", recs)
	}
}

// offeredAgain has the hub offer host's held decisions, not acked, until
// each was offered n times, as when its relay held them for n ack waits (a
// refused decision is held until its ask ends, decision 0273). One
// message at a time: a pull left waiting would take the last ones offered
// and hold them for an ack wait.
func offeredAgain(t *testing.T, th *testHub, host string, held int, n uint64) {
	t.Helper()
	c, err := th.admin(t).Consumer(context.Background(), hub.DecisionsStream, hub.RelayConsumer(host))
	if err != nil {
		t.Fatal(err)
	}
	offered := map[uint64]uint64{}
	for len(offered) < held || slices.Min(slices.Collect(maps.Values(offered))) < n {
		msg, err := c.Next(jetstream.FetchMaxWait(testkit.WaitLimit))
		if err != nil {
			t.Fatal(err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		offered[meta.Sequence.Stream] = meta.NumDelivered
		if err := msg.Nak(); err != nil {
			t.Fatal(err)
		}
	}
}

// Adversarial pass s21: an ask asked again twice (two refused decisions,
// held with it) waited at the hub for minutes, each held decision offered
// again every ack wait; then its relay started again. The restarted relay
// met the second refusal, for a name it had not asked under yet, as a
// decision for an ask no longer here offered 30 times already, and gave it
// up at once; asked under that name again after the first refusal, the ask
// could be decided there by nobody. A decision for an unknown ask is now
// given up after it was offered 30 times to this relay process.
func TestARestartedRelayMeetsLongHeldRefusalsAgain(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	child := alpha.ask(gitFetch("alpha", 1, "npm ci", "npm *"))
	a := refusedEdit(t, ann, refusedEdit(t, ann, ann.queued(t, "alpha-1")))
	alpha.stop()
	offeredAgain(t, th, "alpha", 2, maxUnknownDeliveries)
	alpha.start(th)
	// Shown under its first name, then asked again twice as before.
	shown := ann.events.WaitForN(t, "alpha-1 shown three times again", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == "alpha-1" && q.Ask.ID > a.ID
	}, 3)
	last := shown[2].(serve.AskQueued).Ask
	ann.approves(t, last.ID, child)
	if recs := alpha.audit(); len(recs) != 1 || recs[0].State != wire.StateApproved || recs[0].Approver != "ann" {
		t.Fatalf("audit %+v", recs)
	}
}
