package serve

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// Scenario 6 of issue 8: a log that ends without a newline (a crash
// mid-append) must not swallow the next record.
func TestTornAuditTailIsMovedAsideAndReported(t *testing.T) {
	whole := `{"askId":1,"requestId":"1791279012345-old-1","state":"approved"}` + "\n"
	torn := `{"askId":2,"requestId":"1791279012345-old-2","sta`
	h := startServer(t, options{before: func(h *harness) {
		if err := os.MkdirAll(h.state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.state, "audit.jsonl"), []byte(whole+torn), 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	rep := h.rec.WaitFor(t, "repaired", func(ev Event) bool { _, ok := ev.(Repaired); return ok }).(Repaired)
	if rep.Area != AreaAudit || !strings.Contains(rep.What, "49 bytes") {
		t.Errorf("repair report %+v", rep)
	}
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	h.send(intent("1791279012345-tt-1", "impl", "bash", "ls"))
	h.await("1791279012345-tt-1")

	// auditLines fails on any line that does not parse.
	if recs := h.auditFor("1791279012345-tt-1"); len(recs) != 1 {
		t.Fatalf("the new decision has no parseable record: %+v", recs)
	}
	if recs := h.auditFor("1791279012345-old-1"); len(recs) != 1 {
		t.Fatalf("the whole record before the tear was lost: %+v", recs)
	}
	moved, _ := filepath.Glob(filepath.Join(h.state, "audit.jsonl.torn-*"))
	if len(moved) != 1 {
		t.Fatalf("torn fragment files %v", moved)
	}
	data, err := os.ReadFile(moved[0])
	if err != nil || !bytes.Equal(data, []byte(torn)) {
		t.Fatalf("fragment kept as %q, %v", data, err)
	}
	if st, err := os.Stat(moved[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("fragment mode %v, %v", st.Mode(), err)
	}
}

// Scenario 9: a syntax error in the global config drops its rm deny (pi
// reads it as contributing no rules); a project "*" allow must then not
// approve rm -rf /. Readable denies still deny.
func TestABrokenPolicyFileAllowsNothingAutomatically(t *testing.T) {
	agentDir, project := t.TempDir(), t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	global := filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json")
	write(global, `{"permission":{"bash":{"rm *":"deny"}}`) // one brace short
	write(filepath.Join(project, ".pi", "extensions", "pi-permission-system", "config.json"),
		`{"permission":{"bash":{"*":"allow","sudo *":{"action":"deny","reason":"no sudo"}}}}`)
	store := resolve.NewStore(resolve.LoadOptions{AgentDir: agentDir, ProjectDir: project, TrustProject: true, Home: agentDir})
	h := startServer(t, options{config: func(c *Config) {
		c.Judge = func() Judge { return store.Policy() }
	}})
	h.s.PolicyLoaded(PolicyStatus{Problems: []string{"config.json: broken"}})
	st := h.rec.WaitFor(t, "policy", func(ev Event) bool { _, ok := ev.(PolicyStatus); return ok }).(PolicyStatus)
	if !st.NoAutoAllow {
		t.Fatalf("policy status %+v does not say allows are held", st)
	}

	// Asked from the project judged, which alone may allow (decision 0234).
	inProject := func(req *wire.Request) *wire.Request { req.AccessIntent.RequesterCwd = project; return req }
	h.send(inProject(intent("1791279012345-bp-1", "impl", "bash", "rm -rf /")))
	ask := h.queued("1791279012345-bp-1")
	if !strings.Contains(ask.Verdict.Explanation, "auto-allows nothing") {
		t.Errorf("explanation %q", ask.Verdict.Explanation)
	}
	h.send(inProject(intent("1791279012345-bp-2", "impl", "bash", "sudo ls")))
	if r := h.await("1791279012345-bp-2"); r.Approved || r.DenialReason != "no sudo" {
		t.Fatalf("readable deny: %+v", r)
	}
	if recs := h.auditFor("1791279012345-bp-1"); len(recs) != 0 {
		t.Fatalf("rm -rf / was decided automatically: %+v", recs)
	}

	// Fixed: the project allow applies again (the global deny is back too).
	write(global, `{"permission":{"bash":{"rm *":"deny"}}}`)
	store.Reload()
	h.send(inProject(intent("1791279012345-bp-3", "impl", "bash", "ls")))
	if r := h.await("1791279012345-bp-3"); !r.Approved {
		t.Fatalf("after the fix: %+v", r)
	}
}

// Discovery saturation reaches the front ends as a degraded area, and its
// end as recovered.
func TestDiscoverySaturationIsReportedAsDegraded(t *testing.T) {
	h := startServer(t, options{})
	h.s.onInbox(inbox.Saturated{Max: 1024, Waiting: 3976})
	d := h.rec.WaitFor(t, "degraded", func(ev Event) bool { d, ok := ev.(Degraded); return ok && d.Area == AreaDiscovery }).(Degraded)
	if !strings.Contains(d.Problem, "3976 session directories are not served") || !strings.Contains(d.Problem, "at most 1024") {
		t.Fatalf("%+v", d)
	}
	h.s.onInbox(inbox.Saturated{Max: 1024})
	h.rec.WaitFor(t, "recovered", func(ev Event) bool { d, ok := ev.(Degraded); return ok && d.Area == AreaDiscovery && d.Problem == "" })
}

// Scenario 5: permtui dies between the audit record and the response, and
// restarts after the policy changed. The request is answered with the
// recorded decision, not judged again: one decision per request in the
// log, and a delivery line saying what the child was told.
func TestARecordedDecisionIsDeliveredAfterARestartNotJudgedAgain(t *testing.T) {
	const id = "1791279012345-crash-1"
	first := startServer(t, options{})
	first.judge.set("rm x", ruleVerdict(resolve.Deny, "", "rm *", "global", "no rm"))
	// A regular file where responses/ belongs makes the write fail, even as
	// root.
	responses := first.layout.ResponsesDir(rootID)
	if err := os.MkdirAll(filepath.Dir(responses), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(responses, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := first.layout.RequestPath(rootID, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := wire.MarshalRequest(intent(id, "impl", "bash", "rm x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := safefs.WriteFileAtomic(path, data); err != nil {
		t.Fatal(err)
	}
	first.rec.WaitFor(t, "write failed", func(ev Event) bool { _, ok := ev.(WriteFailed); return ok })
	first.shutdown() // as good as a crash for this answer: nothing more is written

	if err := os.Remove(responses); err != nil {
		t.Fatal(err)
	}
	second := startServer(t, options{reuse: first})
	second.judge.set("rm x", ruleVerdict(resolve.Allow, "", "rm *", "global", "")) // the policy changed
	resp := second.await(id)
	if resp.Approved || resp.DenialReason != "no rm" {
		t.Fatalf("the restarted server judged again: %+v", resp)
	}
	if d := second.decided(id); !d.Replayed {
		t.Errorf("decided event %+v does not say it was replayed", d)
	}
	if recs := second.auditFor(id); len(recs) != 1 || recs[0]["approved"] != false {
		t.Fatalf("decisions for one request: %+v", recs)
	}
	second.shutdown() // delivery lines are written without waiting
	dels := second.deliveriesFor(id)
	if len(dels) != 1 || dels[0]["approved"] != false || dels[0]["state"] != "denied_with_reason" || dels[0]["replayed"] != true {
		t.Fatalf("delivery records %+v", dels)
	}
}

// A grants file recovered at open is reported once the session is served.
func TestARecoveredGrantsFileIsReported(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rootID+".json"), []byte(`[{"surf`), 0o600); err != nil {
		t.Fatal(err)
	}
	gs, err := grants.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := startServer(t, options{config: func(c *Config) { c.Grants = gs }})
	r := h.rec.WaitFor(t, "repaired", func(ev Event) bool { r, ok := ev.(Repaired); return ok && r.Area == AreaGrants }).(Repaired)
	if !strings.Contains(r.What, "no usable backup") {
		t.Fatalf("%+v", r)
	}
}

// Scenario 1: 64 asks waiting for a person (the in-flight bound of a
// session) must not keep an automatic allow or deny from being answered.
func TestAsksWaitingForAPersonDoNotBlockAutomaticAnswers(t *testing.T) {
	h := startServer(t, options{})
	h.judge.set("git status", ruleVerdict(resolve.Allow, "", "git status", "global", ""))
	h.judge.set("rm -rf /", ruleVerdict(resolve.Deny, "", "rm *", "global", "never"))
	for i := range 64 {
		h.send(intent(fmt.Sprintf("1791279012345-wait%02d-1", i), "impl", "bash", fmt.Sprintf("make %d", i)))
	}
	for i := range 64 {
		h.queued(fmt.Sprintf("1791279012345-wait%02d-1", i))
	}
	h.send(intent("1791279012345-auto-1", "impl", "bash", "git status"))
	h.send(intent("1791279012345-auto-2", "impl", "bash", "rm -rf /"))
	if r := h.await("1791279012345-auto-1"); !r.Approved {
		t.Fatalf("%+v", r)
	}
	if r := h.await("1791279012345-auto-2"); r.Approved {
		t.Fatalf("%+v", r)
	}
}

// Scenario 2 of issue 8: memory is bounded over all sessions. Asks for a
// person beyond the parked budget wait on disk (reported as degraded
// memory) and reach the front end, under one AskID each, as earlier ones
// are answered; automatic answers go on meanwhile. Every request is
// answered once.
func TestAsksBeyondTheMemoryBudgetWaitOnDiskAndAreAllAnswered(t *testing.T) {
	h := startServer(t, options{config: func(c *Config) { c.Inbox.Budget.ParkedAsks = 2 }})
	var ids []string
	for i := range 5 {
		ids = append(ids, fmt.Sprintf("1791279012345-mb%d-1", i))
		h.send(intent(ids[i], "impl", "bash", fmt.Sprintf("make %d", i)))
	}
	deg := h.rec.WaitFor(t, "degraded memory", func(ev Event) bool {
		d, ok := ev.(Degraded)
		return ok && d.Area == AreaMemory && strings.HasPrefix(d.Problem, "3 ")
	}).(Degraded)
	if !strings.Contains(deg.Problem, "3 asks for a person wait on disk") || !strings.Contains(deg.Problem, "at most 2 asks") {
		t.Fatalf("%+v", deg)
	}
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	h.send(intent("1791279012345-mb-auto-1", "impl", "bash", "ls"))
	if r := h.await("1791279012345-mb-auto-1"); !r.Approved {
		t.Fatalf("automatic answer while asks wait on disk: %+v", r)
	}

	isQueued := func(ev Event) bool { _, ok := ev.(AskQueued); return ok }
	answered := map[string]bool{}
	for len(answered) < len(ids) {
		queued := h.rec.WaitForN(t, "the next ask", isQueued, len(answered)+1)
		if got := len(h.rec.Filter(isQueued)) - len(answered); got > 2 {
			t.Fatalf("%d asks held for a person under a budget of 2", got)
		}
		ask := queued[len(answered)].(AskQueued).Ask
		if answered[ask.Request.ID] {
			t.Fatalf("%s queued twice", ask.Request.ID)
		}
		if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDenied}); err != nil {
			t.Fatal(err)
		}
		if r := h.await(ask.Request.ID); r.Approved {
			t.Fatalf("%s approved", ask.Request.ID)
		}
		answered[ask.Request.ID] = true
	}
	h.rec.WaitFor(t, "memory recovered", func(ev Event) bool {
		d, ok := ev.(Degraded)
		return ok && d.Area == AreaMemory && d.Problem == ""
	})
	for _, id := range ids {
		if recs := h.auditFor(id); len(recs) != 1 {
			t.Fatalf("%s: %d audit records", id, len(recs))
		}
		if n := h.rec.Count(func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.Ask.Request.ID == id }); n != 1 {
			t.Fatalf("%s arrived %d times at the front end", id, n)
		}
	}
}

// The request bytes held stay within the budget however many asks wait:
// 48 asks of 0.5 MiB (24 MiB of files) under a 4 MiB parked and a 4 MiB
// in-flight budget keep the heap within a small multiple of the budget
// (count bounds alone held all 24 MiB).
func TestHeldRequestBytesStayWithinTheBudget(t *testing.T) {
	const asks, size = 48, 512 << 10
	budget := inbox.Budget{ParkedBytes: 4 << 20, InFlightBytes: 4 << 20, SessionInFlightBytes: 4 << 20}
	var before runtime.MemStats
	h := startServer(t, options{
		config: func(c *Config) { c.Inbox.Budget = budget },
		before: func(h *harness) {
			for i := range asks {
				req := intent(fmt.Sprintf("1791279012345-hb%d-1", i), "impl", "bash", "make "+strings.Repeat("x", size/2))
				h.send(req)
			}
			runtime.GC()
			runtime.ReadMemStats(&before)
		},
	})
	deadline := time.Now().Add(testkit.WaitLimit)
	for u := h.s.inbox.Usage(); u.ParkedAsks+u.DeferredAsks < asks; u = h.s.inbox.Usage() {
		if time.Now().After(deadline) {
			t.Fatalf("not every ask read: %+v", u)
		}
		time.Sleep(5 * time.Millisecond)
	}
	u := h.s.inbox.Usage()
	if u.ParkedBytes > budget.ParkedBytes || u.ParkedAsks == 0 || u.DeferredAsks == 0 {
		t.Fatalf("usage %+v under %+v", u, budget)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if limit := 3 * (budget.ParkedBytes + budget.InFlightBytes); held > limit {
		t.Fatalf("%d MiB held for %d MiB of asks, over %d MiB", held>>20, asks*size>>20, limit>>20)
	}
	t.Logf("%.1f MiB held for %d MiB of asks waiting", float64(held)/(1<<20), asks*size>>20)
}

// The replay index holds the decisions whose requests could still arrive,
// not the whole history: a delivered answer whose request file is gone
// leaves it when the log is read (at start, and as it grows), so neither
// memory nor the index grows with every decision ever made
// (decision 0119). An undelivered decision stays (see the test above).
func TestTheReplayIndexForgetsDecisionsWhoseRequestsAreGone(t *testing.T) {
	first := startServer(t, options{})
	first.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	const n = 50
	for i := range n {
		id := fmt.Sprintf("1791279012345-ix%d-1", i)
		first.send(intent(id, "impl", "bash", "ls"))
		first.await(id)
	}
	first.shutdown() // delivery lines are written without waiting
	if dels := first.deliveriesFor("1791279012345-ix0-1"); len(dels) != 1 || dels[0]["requestGone"] != true {
		t.Fatalf("delivery record %+v does not say the request is gone", dels)
	}
	second := startServer(t, options{reuse: first})
	second.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	second.s.mu.Lock()
	audit := second.s.audit // set by Run
	second.s.mu.Unlock()
	audit.idxMu.Lock()
	got := len(audit.index)
	audit.idxMu.Unlock()
	if got != 0 {
		t.Fatalf("a restart indexed %d of %d delivered decisions", got, n)
	}
}

// A session whose answers cannot be written (a child made its responses/ a
// symlink) does not keep the room every session needs to have its requests
// read: an answer recorded but not delivered is let go of and delivered
// again later, under the same AskID, as recorded (decision 0131). Before,
// the stuck answers held the whole in-flight budget and another session's
// allowed request was never read.
func TestAnswersThatCannotBeWrittenDoNotHoldUpOtherSessions(t *testing.T) {
	const stuck = "0198c3a4-0000-7e8f-9a0b-1c2d3e4f5a6b"
	pad := "ls " + strings.Repeat("x", 330<<10) // a 0.7 MiB file: value and matchValue
	h := startServer(t, options{config: func(c *Config) {
		c.Sessions = []string{rootID, stuck}
		c.Inbox.Budget = inbox.Budget{InFlightBytes: 2 << 20, SessionInFlightBytes: 2 << 20}
	}})
	h.judge.set(pad, ruleVerdict(resolve.Allow, "bash", "ls *", "global", ""))
	h.judge.set("ls", ruleVerdict(resolve.Allow, "bash", "ls", "global", ""))
	if err := safefs.MkdirPrivate(h.layout.RequestsDir(stuck)); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, h.layout.ResponsesDir(stuck)); err != nil {
		t.Fatal(err)
	}
	ids := []string{"1791279012345-st0-1", "1791279012345-st1-1"}
	var asks []AskID
	for _, id := range ids {
		req := intent(id, "impl", "bash", pad)
		req.TargetSessionID = stuck
		data, err := wire.MarshalRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := safefs.WriteFileAtomic(h.layout.RequestPath(stuck, id), data); err != nil {
			t.Fatal(err)
		}
		a := h.rec.WaitFor(t, "arrived "+id, func(ev Event) bool { a, ok := ev.(Arrived); return ok && a.Ask.Request.ID == id }).(Arrived)
		h.rec.WaitFor(t, "write failed "+id, func(ev Event) bool { w, ok := ev.(WriteFailed); return ok && w.Ask == a.Ask.ID })
		asks = append(asks, a.Ask.ID)
	}

	h.send(intent("1791279012345-st-ls-1", "impl", "bash", "ls"))
	if resp := h.await("1791279012345-st-ls-1"); !resp.Approved {
		t.Fatalf("the other session's ls: %+v", resp)
	}

	// Once the child repairs its inbox, each stuck answer is delivered
	// once, as recorded, under its first AskID.
	if err := os.Remove(h.layout.ResponsesDir(stuck)); err != nil {
		t.Fatal(err)
	}
	if err := safefs.MkdirPrivate(h.layout.ResponsesDir(stuck)); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		d := h.rec.WaitFor(t, "decided "+id, func(ev Event) bool { d, ok := ev.(Decided); return ok && d.Ask.Request.ID == id }).(Decided)
		if d.Ask.ID != asks[i] || !d.Response.Approved {
			t.Fatalf("%s delivered as %d approved=%v, first delivered as %d", id, d.Ask.ID, d.Response.Approved, asks[i])
		}
		if n := len(h.auditFor(id)); n != 1 {
			t.Fatalf("%s has %d decisions in the audit log", id, n)
		}
		if n := h.rec.Count(func(ev Event) bool { d, ok := ev.(Decided); return ok && d.Ask.Request.ID == id }); n != 1 {
			t.Fatalf("%s decided %d times", id, n)
		}
	}
}

// An ask waiting on disk beyond the parked budget that the policy comes to
// allow is answered then, not once a person has made room for it: deferred
// asks are judged again when the policy, grants or denies change
// (decision 0117).
func TestADeferredAskThePolicyNowAllowsIsAnsweredAtOnce(t *testing.T) {
	h := startServer(t, options{config: func(c *Config) { c.Inbox.Budget.ParkedAsks = 1 }})
	h.send(intent("1791279012345-dj0-1", "impl", "bash", "make a"))
	h.queued("1791279012345-dj0-1")
	h.send(intent("1791279012345-dj1-1", "impl", "bash", "make b"))
	deadline := time.Now().Add(testkit.WaitLimit)
	for h.s.inbox.Usage().DeferredAsks != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("never deferred: %+v", h.s.inbox.Usage())
		}
		time.Sleep(time.Millisecond)
	}
	h.judge.set("make b", ruleVerdict(resolve.Allow, "bash", "make b", "global", ""))
	h.s.PolicyLoaded(PolicyStatus{})
	if resp := h.await("1791279012345-dj1-1"); !resp.Approved {
		t.Fatalf("make b: %+v", resp)
	}
	if n := h.rec.Count(func(ev Event) bool { q, ok := ev.(AskQueued); return ok && q.Ask.Request.ID == "1791279012345-dj1-1" }); n != 0 {
		t.Fatalf("the deferred ask was queued for a person %d times", n)
	}
	if u := h.s.inbox.Usage(); u.DeferredAsks != 0 || u.ParkedAsks != 1 {
		t.Fatalf("usage after: %+v", u)
	}
}

// A postponed answer whose recorded decision can no longer be read back
// (the audit log cut by hand meanwhile) is never judged again: the policy
// now allows it, but the recorded answer was a deny, and one request must
// not get two decisions. It waits, and says why.
func TestAPostponedAnswerWhoseRecordIsGoneIsNotJudgedAgain(t *testing.T) {
	const id = "1791279012345-pg-1"
	h := startServer(t, options{})
	h.judge.set("rm x", ruleVerdict(resolve.Deny, "", "rm *", "global", "no rm"))
	// A regular file where responses/ belongs: the write fails.
	responses := h.layout.ResponsesDir(rootID)
	if err := safefs.MkdirPrivate(filepath.Dir(responses)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(responses, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := safefs.MkdirPrivate(h.layout.RequestsDir(rootID)); err != nil {
		t.Fatal(err)
	}
	data, err := wire.MarshalRequest(intent(id, "impl", "bash", "rm x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := safefs.WriteFileAtomic(h.layout.RequestPath(rootID, id), data); err != nil {
		t.Fatal(err)
	}
	first := h.rec.WaitFor(t, "write failed", func(ev Event) bool { _, ok := ev.(WriteFailed); return ok }).(WriteFailed)
	if err := os.Truncate(filepath.Join(h.state, "audit.jsonl"), 0); err != nil {
		t.Fatal(err)
	}
	h.judge.set("rm x", ruleVerdict(resolve.Allow, "", "rm *", "global", ""))
	h.rec.WaitFor(t, "the unreadable record reported", func(ev Event) bool {
		w, ok := ev.(WriteFailed)
		return ok && w.Ask == first.Ask && strings.Contains(w.Err, "not judged again")
	})
	if n := h.rec.Count(func(ev Event) bool { _, ok := ev.(Decided); return ok }); n != 0 {
		t.Fatalf("%d decisions delivered", n)
	}
	if recs := h.auditFor(id); len(recs) != 0 {
		t.Fatalf("judged again: %+v", recs)
	}
}
