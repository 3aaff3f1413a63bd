package serve

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/judgment"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

func withDenies(store *grants.Store) func(*Config) {
	return func(c *Config) { c.Denies = store }
}

// A person denies an ask for the session: later asks of the session that
// the deny covers are denied with the person's reason, before grants and
// the policy (which would allow them); others still ask; the deny survives
// a restart; revoking it stops it (decision 0104).
func TestSessionDeny(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grants")
	store, err := grants.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := startServer(t, options{config: withDenies(store)})
	h.judge.set("rm -rf b", ruleVerdict(resolve.Allow, "bash", "rm *", "global", ""))
	if err := h.grants.Add(rootID, []wire.Grant{{Surface: "bash", Pattern: "rm -rf b"}}); err != nil {
		t.Fatal(err)
	}
	// Waiting before the deny: a queued ask the deny covers.
	h.judge.set("rm w", resolve.Verdict{Action: resolve.Ask})
	h.send(intent("1791279012345-sd-0", "impl", "bash", "rm w"))
	waiting := h.queued("1791279012345-sd-0")
	h.judge.set("rm -rf a", resolve.Verdict{Action: resolve.Ask})
	h.send(intent("1791279012345-sd-1", "impl", "bash", "rm -rf a"))
	ask := h.queued("1791279012345-sd-1")
	if waiting.Verdict.Action != resolve.Ask || ask.Verdict.Action != resolve.Ask {
		t.Fatalf("verdicts before the deny: %+v %+v", waiting.Verdict, ask.Verdict)
	}

	rm := &wire.Grant{Surface: "bash", Pattern: "rm *"}
	for _, bad := range []Decision{
		{Ask: ask.ID, State: wire.StateDeniedWithReason, Reason: " ", DenyFor: rm},
		{Ask: ask.ID, State: wire.StateDeniedWithReason, Reason: "no", DenyFor: &wire.Grant{Surface: "bash", Pattern: "git *"}},
		{Ask: ask.ID, State: wire.StateDeniedWithReason, Reason: "no", DenyFor: &wire.Grant{Surface: "path_write", Pattern: "*"}},
		{Ask: ask.ID, State: wire.StateApproved, DenyFor: rm},
	} {
		if err := h.s.Decide(bad); !errors.Is(err, ErrInvalidDecision) {
			t.Errorf("Decide(%+v) = %v, want ErrInvalidDecision", bad, err)
		}
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDeniedWithReason, Reason: "no deleting", DenyFor: rm}); err != nil {
		t.Fatal(err)
	}
	if r := h.await("1791279012345-sd-1"); r.State != wire.StateDeniedWithReason || r.DenialReason != "no deleting" {
		t.Fatalf("the ask denied for the session: %+v", r)
	}
	rec := h.auditFor("1791279012345-sd-1")[0]
	if sd, _ := rec["sessionDeny"].(map[string]any); sd["pattern"] != "rm *" || sd["reason"] != "no deleting" {
		t.Fatalf("audit record of the person's deny: %v", rec)
	}
	// The waiting ask it covers is answered at once.
	if r := h.await("1791279012345-sd-0"); r.State != wire.StateDeniedWithReason || r.DenialReason != "no deleting" {
		t.Fatalf("the waiting ask: %+v", r)
	}

	// A later ask the policy and a grant would allow.
	h.send(intent("1791279012345-sd-2", "impl", "bash", "rm -rf b"))
	if r := h.await("1791279012345-sd-2"); r.State != wire.StateDeniedWithReason || r.DenialReason != "no deleting" {
		t.Fatalf("a later matching ask: %+v", r)
	}
	d := h.decided("1791279012345-sd-2")
	if !d.Auto || d.Response.DecidedBy == nil || d.Response.DecidedBy.Kind != wire.DecidedByRule ||
		d.Response.DecidedBy.Origin == nil || *d.Response.DecidedBy.Origin != resolve.OriginSession {
		t.Fatalf("decided by %+v, auto %v", d.Response.DecidedBy, d.Auto)
	}
	rec = h.auditFor("1791279012345-sd-2")[0]
	if by, _ := rec["decidedBy"].(map[string]any); by["origin"] != "session" || rec["reason"] != "no deleting" || rec["auto"] != true {
		t.Fatalf("audit record of the automatic deny: %v", rec)
	}
	// Any asking unit of a chain.
	chain := intent("1791279012345-sd-3", "impl", "bash", "ls && rm x")
	chain.AccessIntent.AskingUnits = []wire.AskingUnit{{Command: "ls"}, {Command: "rm x"}}
	h.send(chain)
	if r := h.await("1791279012345-sd-3"); r.State != wire.StateDeniedWithReason {
		t.Fatalf("a chain with a covered unit: %+v", r)
	}
	// Not covered: still asks.
	h.send(intent("1791279012345-sd-4", "impl", "bash", "ls"))
	if a := h.queued("1791279012345-sd-4"); a.Verdict.Action != resolve.Ask {
		t.Fatalf("an ask the deny does not cover: %+v", a.Verdict)
	}
	h.shutdown()

	// Restart: the deny is in force from the files, and reported at once.
	again, err := grants.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h2 := startServer(t, options{reuse: h, config: withDenies(again)})
	h2.rec.WaitFor(t, "denies", func(ev Event) bool {
		c, ok := ev.(DeniesChanged)
		return ok && len(c.Denies[rootID]) == 1 && c.Denies[rootID][0].Reason == "no deleting"
	})
	h2.send(intent("1791279012345-sd-5", "impl", "bash", "rm y"))
	if r := h2.await("1791279012345-sd-5"); r.State != wire.StateDeniedWithReason || r.DenialReason != "no deleting" {
		t.Fatalf("after a restart: %+v", r)
	}
	if err := h2.s.RevokeDeny(rootID, SessionDeny{Grant: *rm, Reason: "no deleting"}); err != nil {
		t.Fatal(err)
	}
	h2.rec.WaitFor(t, "revoked", func(ev Event) bool {
		c, ok := ev.(DeniesChanged)
		return ok && len(c.Denies[rootID]) == 0
	})
	h2.send(intent("1791279012345-sd-6", "impl", "bash", "rm z"))
	if a := h2.queued("1791279012345-sd-6"); a.Verdict.Action != resolve.Ask {
		t.Fatalf("after revocation: %+v", a.Verdict)
	}
}

// Without a deny store (a relay) a deny for the session is refused.
func TestSessionDenyNeedsAStore(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("1791279012345-sd-9", "impl", "bash", "rm a"))
	ask := h.queued("1791279012345-sd-9")
	err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDeniedWithReason, Reason: "no", DenyFor: &wire.Grant{Surface: "bash", Pattern: "rm *"}})
	if !errors.Is(err, ErrInvalidDecision) {
		t.Fatalf("Decide = %v", err)
	}
}

// BenchmarkSessionDenyCheck is the cost a served session's denies add to
// judging one ask: a stat of the deny file (re-read only when it changed)
// and the grants' matcher over ten denies that do not cover the ask.
func BenchmarkSessionDenyCheck(b *testing.B) {
	store, err := grants.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		d := SessionDeny{Grant: wire.Grant{Surface: "bash", Pattern: "rm" + string(rune('a'+i)) + " *"}, Reason: "no"}
		if err := store.AddDeny(rootID, d); err != nil {
			b.Fatal(err)
		}
	}
	s := &Server{cfg: Config{Denies: store}}
	judge := &resolve.Policy{}
	req := intent("1791279012345-b-1", "impl", "bash", "git status")
	b.ReportAllocs()
	for b.Loop() {
		denies, err := s.denies(rootID, req)
		if err != nil {
			b.Fatal(err)
		}
		if v := judgment.Verdict(judge, req, nil, denies); v.Action == resolve.Deny {
			b.Fatal("denied")
		}
	}
}

// failingDenies cannot write: a crash between the audit record and the
// deny file looks like this to the next server.
type failingDenies struct{ *grants.Store }

func (failingDenies) AddDeny(string, SessionDeny) error { return errors.New("disk full") }

// A session deny audited but not written (a crash in between) is recorded
// when the next server answers the request with its recorded decision, so
// it is in force without a person recording it again (decision 0104).
func TestASessionDenyAuditedButNotWrittenIsRecordedOnReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grants")
	store, err := grants.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	first := startServer(t, options{config: func(c *Config) { c.Denies = failingDenies{store} }})
	first.judge.set("rm -rf a", resolve.Verdict{Action: resolve.Ask})
	first.send(intent("1791279012345-sdr-1", "impl", "bash", "rm -rf a"))
	ask := first.queued("1791279012345-sdr-1")
	rm := &wire.Grant{Surface: "bash", Pattern: "rm *"}
	if err := first.s.Decide(Decision{Ask: ask.ID, State: wire.StateDeniedWithReason, Reason: "no deleting", DenyFor: rm}); err != nil {
		t.Fatal(err)
	}
	first.rec.WaitFor(t, "the deny write failing", func(ev Event) bool { _, ok := ev.(WriteFailed); return ok })
	first.shutdown()

	second := startServer(t, options{reuse: first, config: withDenies(store)})
	if r := second.await("1791279012345-sdr-1"); r.Approved || r.DenialReason != "no deleting" {
		t.Fatalf("replayed answer %+v", r)
	}
	if got, err := store.Denies(rootID); err != nil || len(got) != 1 || got[0].Grant != *rm || got[0].Reason != "no deleting" {
		t.Fatalf("denies after the replay: %+v, %v", got, err)
	}
	second.judge.set("rm -rf b", ruleVerdict(resolve.Allow, "bash", "rm *", "global", ""))
	second.send(intent("1791279012345-sdr-2", "impl", "bash", "rm -rf b"))
	if r := second.await("1791279012345-sdr-2"); r.Approved || r.DenialReason != "no deleting" {
		t.Fatalf("a later ask the deny covers: %+v", r)
	}
}
