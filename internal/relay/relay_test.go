package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/permtui/permtui/internal/headless"
	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// Two relays (two agent dirs standing for two hosts) and two headless
// approvers racing: every ask is answered exactly once, and the relay's audit
// record names the approver that won.
func TestTwoRelaysTwoApproversEachAskOnce(t *testing.T) {
	th := startHub(t)
	relays := []*testRelay{newRelay(t, th, "alpha"), newRelay(t, th, "beta")}
	ann, bob := newApprover(t, th, "ann"), newApprover(t, th, "bob")

	// One ask first, deterministically: ann decides, bob sees who did.
	first := relays[0].ask(bash("alpha", 0, "npm run build"))
	ann.queued(t, "alpha-0")
	asked := bob.queued(t, "alpha-0")
	if asked.Host != "alpha" || asked.Session != rootID {
		t.Fatalf("host %q session %q", asked.Host, asked.Session)
	}
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-0").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	err := bob.decide(t, serve.Decision{Ask: asked.ID, State: wire.StateDenied})
	if !errors.Is(err, serve.ErrAlreadyDecided) || !strings.Contains(err.Error(), `"ann"`) {
		t.Fatalf("bob's late decision: %v", err)
	}
	if resp := answered(t, first); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	bob.events.WaitFor(t, "decided by ann", func(ev serve.Event) bool {
		d, ok := ev.(serve.Decided)
		return ok && d.Ask.ID == asked.ID && d.Approver == "ann"
	})

	// Then a race: two headless approvers (serve --headless --hub) deny
	// every ask they are shown.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	racers := raceHeadless(t, ctx, th, "ann", "bob")
	const perHost = 8
	var results []<-chan pichild.Result
	for _, r := range relays {
		for i := 1; i <= perHost; i++ {
			results = append(results, r.ask(bash(r.host, i, fmt.Sprintf("make step%d", i))))
		}
	}
	for _, c := range results {
		if resp := answered(t, c); resp.Approved || resp.DenialReason != headless.HubDenyReason {
			t.Fatalf("%+v", resp)
		}
	}
	cancel()
	racers.Wait()

	for _, r := range relays {
		recs := r.audit()
		want := perHost
		if r.host == "alpha" {
			want++
		}
		if len(recs) != want {
			t.Fatalf("%s: %d audit records, want %d", r.host, len(recs), want)
		}
		seen := map[string]bool{}
		for _, rec := range recs {
			if seen[rec.RequestID] {
				t.Fatalf("%s: %s decided twice", r.host, rec.RequestID)
			}
			seen[rec.RequestID] = true
			if rec.Approver != "ann" && rec.Approver != "bob" || rec.Auto || rec.DecidedBy == nil {
				t.Fatalf("%s: %+v", r.host, rec)
			}
			if want := wire.DecidedByUnavailable; rec.RequestID != "alpha-0" && rec.DecidedBy.Kind != want {
				t.Fatalf("%s: %+v", r.host, rec)
			}
		}
		if r.host == "alpha" && recs[0].Approver != "ann" {
			t.Fatalf("the first ask's record names %q", recs[0].Approver)
		}
	}
}

// A relay stopped while its ask waits at the hub leaves the request on disk;
// the decision made meanwhile is delivered by the next relay, once. The
// stopped relay leaves no pull request at the hub, so the decision waits for
// the next relay rather than going to the one that is gone and coming back
// only after the ack wait. A hub restart loses neither the ask
// published before it nor the one that waited at the relay while the hub was
// away.
func TestRelayAndHubRestart(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	first := alpha.ask(bash("alpha", 1, "go test ./..."))
	a1 := ann.queued(t, "alpha-1")
	alpha.stop()
	js := th.admin(t)
	if ci := consumerInfo(t, js, "alpha"); ci.NumWaiting != 0 {
		t.Fatalf("the stopped relay left %d pull requests at the hub", ci.NumWaiting)
	}
	if err := ann.decide(t, serve.Decision{Ask: a1.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	// No relay holds it now (the pending count is updated asynchronously at
	// the hub, so it is not checked).
	if ci := consumerInfo(t, js, "alpha"); ci.NumAckPending != 0 {
		t.Fatalf("the decision went out to a stopped relay (%d unacked)", ci.NumAckPending)
	}
	alpha.start(th)
	if resp := answered(t, first); !resp.Approved {
		t.Fatalf("%+v", resp)
	}

	second := alpha.ask(bash("alpha", 2, "go vet ./..."))
	ann.queued(t, "alpha-2")
	th.stop()
	third := alpha.ask(bash("alpha", 3, "go build ./..."))
	alpha.events.WaitFor(t, "third queued", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == "alpha-3"
	})
	th.start()
	a2, a3 := ann.queued(t, "alpha-2"), ann.queued(t, "alpha-3")
	if err := ann.decide(t, serve.Decision{Ask: a2.ID, State: wire.StateDeniedWithReason, Reason: "not now"}); err != nil {
		t.Fatal(err)
	}
	if err := ann.decide(t, serve.Decision{Ask: a3.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, second); resp.Approved || resp.DenialReason != "not now" {
		t.Fatalf("%+v", resp)
	}
	if resp := answered(t, third); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	recs := alpha.audit()
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.RequestID)
		if r.Approver != "ann" {
			t.Fatalf("%+v", r)
		}
	}
	slices.Sort(ids) // decisions arriving together are delivered in parallel
	if !slices.Equal(ids, []string{"alpha-1", "alpha-2", "alpha-3"}) {
		t.Fatalf("audit %v", ids)
	}
}

// An ask reaches the hub only once its relay's decision consumer exists:
// the consumer starts at the decisions made after its creation, so a
// decision for an ask sent earlier would never be delivered and the child
// would wait in vain. Here the relay cannot create its consumer at first (a
// consumer of that name with another delivery policy is in the way, as a
// slow or failing hub would delay it: it acks nothing, so the relay can
// neither update it nor use it); ann decides as soon as she sees the ask.
func TestNoAskBeforeTheDecisionConsumer(t *testing.T) {
	th := startHub(t)
	js := th.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	if _, err := js.CreateConsumer(ctx, hub.DecisionsStream, jetstream.ConsumerConfig{
		Durable:       hub.RelayConsumer("alpha"),
		FilterSubject: hub.DecisionSubjectPrefix + "alpha.>",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckNonePolicy,
	}); err != nil {
		t.Fatal(err)
	}
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	first := alpha.ask(bash("alpha", 1, "go test ./..."))
	alpha.events.WaitFor(t, "queued", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == "alpha-1"
	})
	alpha.logs.WaitFor(t, "consumer refused", func(m string) bool { return strings.HasPrefix(m, "decision consumer not ready; retrying") })
	if err := js.DeleteConsumer(ctx, hub.DecisionsStream, hub.RelayConsumer("alpha")); err != nil {
		t.Fatal(err)
	}
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-1").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, first); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
}

// Every connection authenticates: unknown keys and the wrong role's
// credentials are refused.
func TestWrongCredentialsAreRejected(t *testing.T) {
	th := startHub(t)
	stranger, err := hub.ReadCreds(writeStranger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Connect(th.url(), stranger, hub.RoleRelay, "alpha"); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("stranger connected: %v", err)
	}
	if _, err := hub.Connect(th.url(), th.creds(hub.RoleApprover, "ann"), hub.RoleRelay, "alpha"); err == nil {
		t.Fatal("an approver's credentials served as a relay's")
	}
}

// The server enforces the relay's permissions: it cannot publish an ask for
// another host, read another host's decisions, or publish a decision.
func TestRelayCannotActForAnotherHost(t *testing.T) {
	th := startHub(t)
	nc, err := hub.Connect(th.url(), th.creds(hub.RoleRelay, "alpha"), hub.RoleRelay, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A refused publish is never acknowledged: each attempt times out.
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	key := wire.RequestKey{Session: rootID, ID: "x", CreatedAt: 1}.String()
	if _, err := js.Publish(short(), hub.AskSubject("beta", key), []byte(`{}`)); err == nil {
		t.Fatal("alpha published an ask for beta")
	}
	if _, err := js.Publish(short(), hub.DecisionSubjectPrefix+hub.DecisionKey("alpha", key), []byte(`{}`)); err == nil {
		t.Fatal("alpha published a decision")
	}
	if _, err := js.CreateOrUpdateConsumer(short(), hub.DecisionsStream, jetstream.ConsumerConfig{
		Durable: hub.RelayConsumer("alpha"), FilterSubject: hub.DecisionSubjectPrefix + "beta.>",
	}); err == nil {
		t.Fatal("alpha read beta's decisions")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	// Its own host works.
	if _, err := js.Publish(ctx, hub.AskSubject("alpha", key), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	// Nothing of beta's reached the stream.
	annNC, err := hub.Connect(th.url(), th.creds(hub.RoleApprover, "ann"), hub.RoleApprover, "ann")
	if err != nil {
		t.Fatal(err)
	}
	defer annNC.Close()
	admin, err := jetstream.New(annNC)
	if err != nil {
		t.Fatal(err)
	}
	s, err := admin.Stream(ctx, hub.AsksStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLastMsgForSubject(ctx, hub.AskSubject("beta", key)); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("beta's subject: %v", err)
	}
}

// writeStranger writes permtui credentials the hub never issued.
func writeStranger(t *testing.T) string {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stranger.creds")
	data := fmt.Sprintf(`{"role":"relay","name":"alpha","seed":%q}`, seed)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A whole-session grant applies on the host whose relay recorded it, not on
// another host serving the same root session (decision 0211); consoles
// show it, and its revocation reaches that relay.
func TestAGrantAppliesOnlyOnItsHost(t *testing.T) {
	th := startHub(t)
	alpha, beta := newRelay(t, th, "alpha"), newRelay(t, th, "beta")
	ann := newApprover(t, th, "ann")

	first := alpha.ask(bash("alpha", 1, "npm test"))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-1").ID, Scope: serve.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, first); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	// Once ann shows it, it is in the bucket.
	grant := ann.events.WaitFor(t, "grants at ann", func(ev serve.Event) bool {
		g, ok := ev.(serve.GrantsChanged)
		return ok && len(g.Grants[rootID]) == 1
	}).(serve.GrantsChanged).Grants[rootID][0]
	resp := answered(t, alpha.ask(bash("alpha", 2, "npm test")))
	if !resp.Approved || resp.DecidedBy == nil || resp.DecidedBy.Kind != "rule" {
		t.Fatalf("alpha: %+v", resp)
	}

	beta.ignores(t, writeMark(t, th, "beta"))
	if beta.appliesAny() {
		t.Fatal("beta applies a grant")
	}
	c := beta.ask(bash("beta", 1, "npm test"))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "beta-1").ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, c); resp.Approved {
		t.Fatalf("beta: %+v", resp)
	}

	if err := ann.RevokeGrant(rootID, grant); err != nil {
		t.Fatal(err)
	}
	alpha.events.WaitFor(t, "alpha revoked", func(ev serve.Event) bool {
		g, ok := ev.(serve.GrantsChanged)
		return ok && len(g.Grants[rootID]) == 0
	})
	// A grant no host's list holds is not reported revoked (review finding).
	if err := ann.RevokeGrant(rootID, wire.Grant{Surface: "bash", Pattern: "never granted"}); err == nil {
		t.Fatal("revoking a grant no host holds reported success")
	}
	c = alpha.ask(bash("alpha", 3, "npm test"))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-3").ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, c); resp.Approved {
		t.Fatalf("alpha after revocation: %+v", resp)
	}
}

// writeMark writes a grant of rootID under host's key with the hub's own
// user, as the last of the grants written so far, and returns it.
func writeMark(t *testing.T, th *testHub, host string) wire.Grant {
	t.Helper()
	mark := wire.Grant{Surface: "bash", Pattern: "echo mark"}
	data, err := json.Marshal(grantsMsg{Session: rootID, Grants: []wire.Grant{mark}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	if _, err := th.admin(t).Publish(ctx, hub.GrantSubjectPrefix+hub.GrantsKey(host, rootID), data); err != nil {
		t.Fatal(err)
	}
	return mark
}

// ignores waits until tr logs g as a grant in the bucket it never
// recorded, not applied (decision 0247): it has then read past every grant
// written before g.
func (tr *testRelay) ignores(t *testing.T, g wire.Grant) {
	t.Helper()
	tr.logs.WaitFor(t, tr.host+" ignores "+g.Pattern, func(line string) bool {
		return strings.Contains(line, "never recorded are not applied") && strings.Contains(line, "{"+g.Surface+" "+g.Pattern+"}")
	})
}

// appliesAny: tr's server was told of a grant of rootID.
func (tr *testRelay) appliesAny() bool {
	return tr.events.Count(func(ev serve.Event) bool {
		g, ok := ev.(serve.GrantsChanged)
		return ok && len(g.Grants[rootID]) > 0
	}) > 0
}

// A person at a hub console narrows the whole-session pattern; the relay's
// server is the one place that judges the edit, and its audit record, the
// grants bucket and the relay's later judgment carry the narrowed pattern.
func TestNarrowedGrantReachesTheRelayAsNarrowed(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	first := alpha.ask(bash("alpha", 1, "npm test --watch"))
	a := ann.queued(t, "alpha-1")
	scope, ok := a.Scopes.Find(serve.ScopeSession)
	if !ok || len(scope.Grants) != 1 || scope.Grants[0].Pattern == "npm test --watch" {
		t.Fatalf("offered %+v", scope)
	}
	narrowed := []wire.Grant{{Surface: scope.Grants[0].Surface, Pattern: "npm test --watch"}}
	if err := ann.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession, Grants: narrowed}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, first); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	recs := alpha.audit()
	if len(recs) != 1 || !slices.Equal(recs[0].Grants, narrowed) || recs[0].Approver != "ann" {
		t.Fatalf("audit %+v", recs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	kv, err := th.admin(t).KeyValue(ctx, hub.GrantsBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, hub.GrantsKey("alpha", rootID))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for e := range w.Updates() {
		if e == nil {
			continue
		}
		var m grantsMsg
		if err := json.Unmarshal(e.Value(), &m); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.Grants, narrowed) {
			t.Fatalf("grants bucket %+v", m.Grants)
		}
		break
	}
	// The edited command passes, another one the offered pattern covered
	// still comes to a person.
	if resp := answered(t, alpha.ask(bash("alpha", 2, "npm test --watch"))); !resp.Approved || resp.DecidedBy.Kind != "rule" {
		t.Fatalf("%+v", resp)
	}
	alpha.ask(bash("alpha", 3, "npm test --coverage"))
	ann.queued(t, "alpha-3")
}

// An edit the relay's server refuses (it no longer covers the ask) is
// asked again (decision 0273), at most maxAskedAgain times: the refusal
// after that is the child's answer, with the refusal as its reason, and
// the console sees why. No person denied it: the response, the audit
// record and the console say the relay did, refusing ann's decision, not
// that ann denied it.
func TestRefusedHubDecisionDeniesTheChild(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	first := alpha.ask(bash("alpha", 1, "npm test --watch"))
	a := ann.queued(t, "alpha-1")
	scope, _ := a.Scopes.Find(serve.ScopeSession)
	wrong := []wire.Grant{{Surface: scope.Grants[0].Surface, Pattern: "make *"}}
	for range maxAskedAgain {
		if err := ann.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession, Grants: wrong}); err != nil {
			t.Fatal(err)
		}
		a = askedAgain(t, ann, a, "does not cover this ask")
	}
	if err := ann.decide(t, serve.Decision{Ask: a.ID, Scope: serve.ScopeSession, Grants: wrong}); err != nil {
		t.Fatal(err)
	}
	resp := answered(t, first)
	if resp.Approved || !strings.Contains(resp.DenialReason, "does not cover this ask") {
		t.Fatalf("%+v", resp)
	}
	const refused = "the decision ann made at the hub was refused, so the relay denied the ask: "
	ev := ann.events.WaitFor(t, "denial shown", func(ev serve.Event) bool {
		d, ok := ev.(serve.Decided)
		return ok && d.Ask.ID == a.ID
	}).(serve.Decided)
	recs := alpha.audit()
	if len(recs) != 1 || len(recs[0].Grants) != 0 {
		t.Fatalf("audit %+v", recs)
	}
	byRelay(t, "response", resp.DecidedBy, "", refused)
	byRelay(t, "audit", recs[0].DecidedBy, recs[0].Approver, refused)
	byRelay(t, "console", ev.Response.DecidedBy, ev.Approver, refused)
	if !strings.Contains(ev.Response.DenialReason, "does not cover this ask") {
		t.Fatalf("console: %+v", ev.Response)
	}
}

// byRelay checks that an answer is recorded as the relay's denial, for
// the reason that begins with prefix, and names no approver as its decider.
func byRelay(t *testing.T, where string, by *wire.DecisionSource, approver, prefix string) {
	t.Helper()
	if by == nil || by.Kind != wire.DecidedByUnavailable || by.Reason == nil || !strings.HasPrefix(*by.Reason, prefix) || approver != "" {
		t.Errorf("%s: decided by %+v, approver %q; want unavailable, %q…, no approver", where, by, approver, prefix)
	}
}

// The hub and the replay index of the audit log name an ask alike
// (decision 0186): the decision a person made over the hub sits at the
// key that the relay's audit record of it gives, qualified by the file
// delivered (decision 0237), so a restarted relay's server replays the
// decision the hub holds for the same ask.
func TestTheHubAndTheReplayIndexNameAnAskAlike(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	req := bash("alpha", 1, "npm test --watch")
	c := alpha.ask(req)
	a := ann.queued(t, req.ID)
	ann.approves(t, a.ID, c)
	recs := alpha.audit()
	if len(recs) != 1 {
		t.Fatalf("audit %+v", recs)
	}
	rec := recs[0]
	if rec.RequesterSession == "" {
		t.Fatal("the ask names no requester: the test would not tell the requester is part of the key")
	}
	key := alpha.key(t, req.ID)
	recKey := wire.RequestKey{Session: rec.ServedSession, ID: rec.RequestID, Requester: rec.RequesterSession, CreatedAt: rec.CreatedAt}
	if !strings.HasPrefix(key, recKey.String()+"-") {
		t.Fatalf("the ask's hub key %s does not begin with the audit record's key %s", key, recKey)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	kv, err := th.admin(t).KeyValue(ctx, hub.DecisionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, hub.DecisionKey("alpha", key)); err != nil {
		t.Fatalf("no decision at the audit record's key: %v", err)
	}
}

// The decisions bucket takes one message per ask, so whatever holds that
// place is the ask's decision: a delete marker or a value no relay can
// read, or one whose approver did not mark it as theirs, denies the ask
// rather than leaving its child waiting for good. No person denied it, and
// the name such a value claims is not recorded: the response, the audit
// record and the console say the hub's decision could not be read and the
// relay denied the ask.
func TestAnUnreadableDecisionDeniesTheAsk(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	kv, err := th.jetStream(t, hub.RoleApprover, "bob").KeyValue(ctx, hub.DecisionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, spoil := range []func(key string) error{
		func(key string) error { return kv.Delete(ctx, key) },
		func(key string) error { _, err := kv.Create(ctx, key, []byte(`{"state":`)); return err },
		func(key string) error {
			_, err := kv.Create(ctx, key, []byte(`{"state":"denied","approver":"ann bob","decidedAt":1}`))
			return err
		},
		// Bob's credentials write under ann's name, with no mark of
		// ann's (finding H2, decision 0212).
		func(key string) error {
			_, err := kv.Create(ctx, key, []byte(`{"state":"approved","approver":"ann","decidedAt":1}`))
			return err
		},
	} {
		req := bash("alpha", i, "npm publish")
		c := alpha.ask(req)
		a := ann.queued(t, req.ID)
		if err := spoil(hub.DecisionKey("alpha", alpha.key(t, req.ID))); err != nil {
			t.Fatal(err)
		}
		resp := answered(t, c)
		if resp.Approved || !strings.HasPrefix(resp.DenialReason, UnreadablePrefix) {
			t.Fatalf("%d: %+v", i, resp)
		}
		if err := ann.decide(t, serve.Decision{Ask: a.ID, State: wire.StateApproved}); err == nil {
			t.Fatalf("%d: a second decision was taken", i)
		}
		ev := ann.events.WaitFor(t, "denial shown", func(ev serve.Event) bool {
			d, ok := ev.(serve.Decided)
			return ok && d.Ask.ID == a.ID
		}).(serve.Decided)
		recs := alpha.audit()
		if len(recs) != i+1 || recs[i].RequestID != req.ID {
			t.Fatalf("%d: audit %+v", i, recs)
		}
		byRelay(t, fmt.Sprint(i, " response"), resp.DecidedBy, "", UnreadablePrefix)
		byRelay(t, fmt.Sprint(i, " audit"), recs[i].DecidedBy, recs[i].Approver, UnreadablePrefix)
		byRelay(t, fmt.Sprint(i, " console"), ev.Response.DecidedBy, ev.Approver, UnreadablePrefix)
	}
}

// A relay whose decision consumer disappears makes it again from the first
// decision it has not acked and says so: a decision made while it was gone
// is delivered, none is skipped (issue 20: the relay logged one warning and
// never received again).
func TestDeletedDecisionConsumerIsMadeAgain(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	js := th.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()

	first := alpha.ask(bash("alpha", 1, "go test ./..."))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-1").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	answered(t, first)
	second := alpha.ask(bash("alpha", 2, "go vet ./..."))
	a2 := ann.queued(t, "alpha-2")
	if err := js.DeleteConsumer(ctx, hub.DecisionsStream, hub.RelayConsumer("alpha")); err != nil {
		t.Fatal(err)
	}
	if err := ann.decide(t, serve.Decision{Ask: a2.ID, State: wire.StateDeniedWithReason, Reason: "not now"}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, second); resp.Approved || resp.DenialReason != "not now" {
		t.Fatalf("%+v", resp)
	}
	alpha.logs.WaitFor(t, "reported", func(m string) bool { return strings.HasPrefix(m, "decision consumer was gone") })
	// And it keeps receiving.
	third := alpha.ask(bash("alpha", 3, "go build ./..."))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-3").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, third); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if recs := alpha.audit(); len(recs) != 3 {
		t.Fatalf("%d audit records", len(recs))
	}
}

// A relay restarted under another host name publishes its waiting ask under
// the new host (its deduplication id names the host, so the hub does not
// drop it as a repeat), consoles let go of the old copy, and the decision
// made on the new one reaches the child (issue 20: the old copy stayed, and
// an approval of it was accepted and never delivered).
func TestReHostedRelaysAsksMoveToTheNewHost(t *testing.T) {
	th := startHub(t)
	tr := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	c := tr.ask(bash("alpha", 1, "npm run deploy"))
	old := ann.queued(t, "alpha-1")
	if old.Host != "alpha" {
		t.Fatalf("host %q", old.Host)
	}
	tr.stop()
	tr.host = "beta"
	tr.start(th)
	moved := ann.events.WaitFor(t, "shown under beta", func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == "alpha-1" && q.Ask.Host == "beta"
	}).(serve.AskQueued).Ask
	ann.events.WaitFor(t, "old copy gone", func(ev serve.Event) bool {
		w, ok := ev.(serve.Withdrawn)
		return ok && w.ID == old.ID
	})
	if err := ann.decide(t, serve.Decision{Ask: old.ID, State: wire.StateApproved}); !errors.Is(err, serve.ErrUnknownAsk) {
		t.Fatalf("the old copy was decided: %v", err)
	}
	ann.approves(t, moved.ID, c)
}

// A relay moved alpha → beta → alpha: the ask is shown again under alpha,
// where it is open, and the beta copy is let go of, saying where it moved
// (finding F8: the approver ignored alpha's subject for its lifetime, the
// hub dropped the re-sent ask as a duplicate, and only the dead beta copy
// was shown, labelled as a child that stopped waiting).
func TestAnAskMovedBackToItsFirstHostIsShownAgain(t *testing.T) {
	th := startHub(t)
	tr := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	c := tr.ask(bash("alpha", 1, "npm run rehost"))
	first := ann.queued(t, "alpha-1")
	shownUnder := func(host string) serve.Ask {
		return ann.events.WaitFor(t, "shown under "+host, func(ev serve.Event) bool {
			q, ok := ev.(serve.AskQueued)
			return ok && q.Ask.Request.ID == "alpha-1" && q.Ask.Host == host && q.Ask.ID != first.ID
		}).(serve.AskQueued).Ask
	}
	rehost := func(host string) serve.Ask {
		tr.stop()
		tr.host = host
		tr.start(th)
		return shownUnder(host)
	}
	moved := rehost("beta")
	back := rehost("alpha")
	w := ann.events.WaitFor(t, "beta copy let go of", func(ev serve.Event) bool {
		w, ok := ev.(serve.Withdrawn)
		return ok && w.ID == moved.ID
	}).(serve.Withdrawn)
	if w.Why != "moved to alpha, where it is asked again" {
		t.Fatalf("the beta copy let go of as %+v", w)
	}
	if err := ann.decide(t, serve.Decision{Ask: moved.ID, State: wire.StateApproved}); !errors.Is(err, serve.ErrUnknownAsk) {
		t.Fatalf("the beta copy was decided: %v", err)
	}
	ann.approves(t, back.ID, c)
}

// bigBash is a bash request whose file is just under n bytes.
func bigBash(t *testing.T, host string, i, n int) *wire.Request {
	t.Helper()
	size := func(c int) int {
		raw, err := wire.MarshalRequest(bash(host, i, "echo "+strings.Repeat("a", c)))
		if err != nil {
			t.Fatal(err)
		}
		return len(raw)
	}
	per := size(2) - size(1) // the command is carried more than once in a request
	base := size(1) - per
	req := bash(host, i, "echo "+strings.Repeat("a", (n-base)/per))
	if got := size((n - base) / per); got > n || got < n-4*per {
		t.Fatalf("request of %d bytes, want just under %d", got, n)
	}
	return req
}

// Every request the inbox accepts (a file up to 1 MiB) reaches a console
// through the embedded hub: the ask carries the request once, and the
// verdict beside it only as much of the request's text as a person reads
// (issue 20: a 750 KB request made a 1.5 MB ask and was denied).
func TestTheLargestRequestTravelsThroughTheHub(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	req := bigBash(t, "alpha", 1, wire.MaxFileSize)
	c := alpha.ask(req)
	a := ann.queued(t, "alpha-1")
	if a.Request.Value == nil || *a.Request.Value != *req.Value {
		t.Fatal("the request changed on the way")
	}
	ann.approves(t, a.ID, c)
}

// A hub whose max_payload is below an ask's size: the relay reads the limit
// when it connects and denies the ask at once with the reason, instead of
// retrying "maximum payload exceeded" for ever while the child waits.
func TestAnAskAboveTheHubsMaxPayloadIsDenied(t *testing.T) {
	th := startHubWith(t, func(cfg *hub.Config) { cfg.MaxPayload = 256 << 10 })
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	resp := answered(t, alpha.ask(bigBash(t, "alpha", 1, 300<<10)))
	if resp.Approved || !strings.Contains(resp.DenialReason, "max_payload") || resp.DecidedBy.Kind != wire.DecidedByUnavailable {
		t.Fatalf("%+v", resp)
	}
	// The console shows the denial, with the request's text cut.
	shown := ann.events.WaitFor(t, "the denial shown", func(ev serve.Event) bool {
		d, ok := ev.(serve.Decided)
		return ok && d.Ask.Request.ID == "alpha-1"
	}).(serve.Decided)
	if shown.Response.DenialReason != resp.DenialReason || shown.Ask.Host != "alpha" || len(*shown.Ask.Request.Value) > 8<<10 {
		t.Fatalf("%+v", shown)
	}
	// A smaller one still goes.
	c := alpha.ask(bigBash(t, "alpha", 2, 200<<10))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-2").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, c); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
}

// A decision the hub does not confirm (it is down, or electing a leader)
// is not lost: the person is told it is still being delivered, the
// approver keeps sending it until the hub takes it, and the child gets it
// (issue 20: a decision write that failed during a leader election was
// never retried and the child never answered).
func TestADecisionIsDeliveredThroughAHubOutage(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	c := alpha.ask(bash("alpha", 1, "make release"))
	a := ann.queued(t, "alpha-1")
	th.stop()
	err := ann.decide(t, serve.Decision{Ask: a.ID, State: wire.StateDeniedWithReason, Reason: "after the freeze"})
	if !errors.Is(err, serve.ErrDelivering) {
		t.Fatalf("decision while the hub is down: %v", err)
	}
	if err := ann.decide(t, serve.Decision{Ask: a.ID, State: wire.StateApproved}); !errors.Is(err, serve.ErrDelivering) {
		t.Fatalf("a second decision while the first is sent: %v", err)
	}
	th.start()
	if resp := answered(t, c); resp.Approved || resp.DenialReason != "after the freeze" {
		t.Fatalf("%+v", resp)
	}
	if recs := alpha.audit(); len(recs) != 1 || recs[0].Approver != "ann" {
		t.Fatalf("audit %+v", recs)
	}
}

// A batch whose acknowledgements never come (the messages were lost with a
// stopping node; here the server drops them for want of permission) is
// handed back for retrying once the batch's deadline passes, every message
// of it: publishing went on waiting for good for the second one, so every
// later ask of that relay stayed unsent (found by TestClusterRecipe).
func TestAPublishBatchNeverWaitsForeverForAcknowledgements(t *testing.T) {
	th := startHub(t)
	nc, err := hub.Connect(th.url(), th.creds(hub.RoleRelay, "alpha"), hub.RoleRelay, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	agentDir, grants := t.TempDir(), NewGrants()
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, Home: agentDir})
	srv, err := serve.New(serve.Config{Layout: wire.NewLayout(agentDir), StateDir: t.TempDir(),
		Judge: func() serve.Judge { return policy }, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(srv, nc, "alpha", grants, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := []outMsg{
		{subject: hub.GoneSubject("beta", "k1"), msgID: "1", data: []byte(`{}`)},
		{subject: hub.GoneSubject("beta", "k2"), msgID: "2", data: []byte(`{}`)},
	}
	done := make(chan []outMsg, 1)
	go func() { done <- r.send(context.Background(), batch) }()
	select {
	case failed := <-done:
		if len(failed) != 2 {
			t.Fatalf("%d handed back", len(failed))
		}
	case <-time.After(testkit.WaitLimit):
		t.Fatal("send still waits for acknowledgements that never come")
	}
}

// TestAStalledFrontEndDoesNotHoldUpTheRelay: the relay is a subscriber of
// its server beside the headless printer, so a printer whose stdout blocks
// does not keep asks from the hub or decisions from the child (decision
// 0220); the relay passed the server's events on to it, and waited for it.
func TestAStalledFrontEndDoesNotHoldUpTheRelay(t *testing.T) {
	th := startHub(t)
	tr := &testRelay{t: t, host: "alpha", agentDir: t.TempDir(), stateDir: t.TempDir(), stallFront: true}
	tr.start(th)
	t.Cleanup(tr.stop)
	ann := newApprover(t, th, "ann")
	c := tr.ask(bash("alpha", 0, "npm run build"))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-0").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, c); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
}

// TestAnApprovePageDecisionOverTheHubNamesItsLink: a person who answers on a
// hub approver's approve page is recorded in the relay's audit as the
// approver and the link, and a second subscriber of the approver (the page,
// a notifier) sees the asks the front end sees.
func TestAnApprovePageDecisionOverTheHubNamesItsLink(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	extra, cancel := ann.Subscribe()
	defer cancel()
	got := alpha.ask(bash("alpha", 1, "make deploy"))
	a := ann.queued(t, "alpha-1")
	for ev := range extra {
		if q, ok := ev.(serve.AskQueued); ok && q.Ask.ID == a.ID {
			break
		}
	}
	if err := ann.decide(t, serve.Decision{Ask: a.ID, State: wire.StateApproved, Approver: "web:0123456789ab"}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, got); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if recs := alpha.audit(); len(recs) != 1 || recs[0].Approver != "ann · web:0123456789ab" {
		t.Fatalf("audit %+v", recs)
	}
}

// A decision whose via is not an approve page link is refused, like a bad
// approver name: the relay denies the ask rather than record a forged name.
func TestADecisionWithAForgedViaIsRefused(t *testing.T) {
	for via, ok := range map[string]bool{"": true, "web:0123456789ab": true, "ann\u001b[2J": false, "web:0123": false, "bob": false} {
		d := decisionMsg{State: wire.StateApproved, Approver: "ann", Via: via}
		if err := d.check(); (err == nil) != ok {
			t.Errorf("via %q: %v", via, err)
		}
	}
}

// The approver refuses a via the relay would refuse before the hub takes it
// as the ask's one decision, so the ask can still be decided.
func TestAnApproverRefusesAForgedViaBeforeTheHubTakesIt(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	got := alpha.ask(bash("alpha", 1, "make deploy"))
	a := ann.queued(t, "alpha-1")
	if err := ann.decide(t, serve.Decision{Ask: a.ID, State: wire.StateApproved, Approver: "ann\x1b[2J"}); !errors.Is(err, serve.ErrInvalidDecision) {
		t.Fatalf("a forged via: %v, want ErrInvalidDecision", err)
	}
	ann.approves(t, a.ID, got)
}

// A decision for an ask the relay does not know is offered again while the
// ask may still come: for the inbox's first deliveries after a restart, and
// for as long as asks for a person wait on disk beyond serve's memory budget
// (one of them may be it); only then is it given up (decision 0209).
func TestADecisionForAnAskWaitingOnDiskIsKept(t *testing.T) {
	for _, tc := range []struct {
		n      uint64
		onDisk bool
		giveUp bool
		delay  time.Duration
	}{
		{0, false, false, unknownDelay},
		{maxUnknownDeliveries - 1, false, false, unknownDelay},
		{maxUnknownDeliveries, false, true, 0},
		{maxUnknownDeliveries, true, false, onDiskDelay},
		{10 * maxUnknownDeliveries, true, false, onDiskDelay},
	} {
		if giveUp, delay := unknownDecision(tc.n, tc.onDisk); giveUp != tc.giveUp || delay != tc.delay {
			t.Errorf("unknownDecision(%d, %v) = %v, %v; want %v, %v", tc.n, tc.onDisk, giveUp, delay, tc.giveUp, tc.delay)
		}
	}
	// The relay learns it from the server's memory reports.
	r := &Relay{}
	r.handle(serve.Degraded{Area: serve.AreaMemory, Problem: "3 asks for a person wait on disk"})
	if !r.onDisk {
		t.Fatal("asks waiting on disk not noted")
	}
	r.handle(serve.Degraded{Area: serve.AreaAudit, Problem: "the audit log cannot be written"})
	r.handle(serve.Degraded{Area: serve.AreaMemory})
	if r.onDisk {
		t.Fatal("recovery not noted")
	}
}

// H1: relay alpha's credentials cannot write grants that relay beta applies,
// under beta's key or the old layout's one key per session, nor the list
// consoles show as beta's (decision 0274), and a grant an older hub left
// under the old layout is never applied (decision 0211). A later grant
// written under beta's key, which beta ignores, shows that beta read past
// both.
func TestARelaysCredentialsCannotGrantForAnotherHost(t *testing.T) {
	th := startHub(t)
	beta := newRelay(t, th, "beta")
	ann := newApprover(t, th, "ann")
	everything, _ := json.Marshal(grantsMsg{Session: rootID, Grants: []wire.Grant{{Surface: "*", Pattern: "*"}}})
	oldKey := hub.GrantSubjectPrefix + hub.SessionKey(rootID)

	alpha := th.jetStream(t, hub.RoleRelay, "alpha")
	for _, subject := range []string{oldKey, hub.GrantSubjectPrefix + hub.GrantsKey("beta", rootID), hub.GrantSubjectPrefix + hub.AppliedKey("beta", rootID)} {
		// A refused publish is never acknowledged.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := alpha.Publish(ctx, subject, everything)
		cancel()
		if err == nil {
			t.Fatalf("relay alpha wrote %s", subject)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	if _, err := th.admin(t).Publish(ctx, oldKey, everything); err != nil {
		t.Fatal(err)
	}
	mark := writeMark(t, th, "beta")
	beta.ignores(t, mark) // never recorded by beta (decision 0247)
	if beta.appliesAny() {
		t.Fatal("beta applies a grant")
	}
	c := beta.ask(bash("beta", 1, "rm -rf /home"))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "beta-1").ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, c); resp.Approved {
		t.Fatalf("%+v", resp)
	}
}
