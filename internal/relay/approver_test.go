package relay

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// fakeRelay publishes asks and their gone messages as the relay of host
// would, so a test controls the asks stream exactly.
type fakeRelay struct {
	t    testing.TB
	js   jetstream.JetStream
	host string
	keys map[string]string // request id → hub key
}

func newFakeRelay(t testing.TB, th *testHub, host string) *fakeRelay {
	t.Helper()
	return &fakeRelay{t: t, js: th.jetStream(t, hub.RoleRelay, host), host: host, keys: map[string]string{}}
}

// ask publishes the ask of bash(host, i, command) and returns its request id.
func (f *fakeRelay) ask(i int, command string) string {
	f.t.Helper()
	req := bash(f.host, i, command)
	raw, err := wire.MarshalRequest(req)
	if err != nil {
		f.t.Fatal(err)
	}
	data, err := json.Marshal(askMsg{Host: f.host, Session: rootID, Path: "/inbox/" + req.ID + ".json", At: time.Now().UnixMilli(), Request: raw})
	if err != nil {
		f.t.Fatal(err)
	}
	key := wire.KeyOf(rootID, req).String()
	f.keys[req.ID] = key
	f.publish(hub.AskSubject(f.host, key), data)
	return req.ID
}

// gone publishes that the ask of request id is answered with resp, or
// withdrawn when resp is nil.
func (f *fakeRelay) gone(id string, resp *wire.Response) {
	f.t.Helper()
	data, err := json.Marshal(goneMsg{Response: resp})
	if err != nil {
		f.t.Fatal(err)
	}
	f.publish(hub.GoneSubject(f.host, f.keys[id]), data)
}

func (f *fakeRelay) publish(subject string, data []byte) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	if _, err := f.js.Publish(ctx, subject, data); err != nil {
		f.t.Fatal(err)
	}
}

func isQueued(ev serve.Event) bool { _, ok := ev.(serve.AskQueued); return ok }

func isMemory(problem func(string) bool) func(serve.Event) bool {
	return func(ev serve.Event) bool {
		d, ok := ev.(serve.Degraded)
		return ok && d.Area == serve.AreaMemory && problem(d.Problem)
	}
}

// answerInTurn answers the asks the approver shows, one at a time, until
// want have been shown: even ones decided at the hub (and then reported
// answered, as their relay would), odd ones withdrawn. It returns the
// request ids in the order they were shown.
func answerInTurn(t *testing.T, ann *testApprover, relay *fakeRelay, want int) []string {
	t.Helper()
	var shown []string
	for len(shown) < want {
		q := ann.events.WaitForN(t, "the next ask", isQueued, len(shown)+1)
		ask := q[len(shown)].(serve.AskQueued).Ask
		shown = append(shown, ask.Request.ID)
		if len(shown)%2 == 1 {
			if err := ann.decide(t, serve.Decision{Ask: ask.ID, State: wire.StateDenied}); err != nil {
				t.Fatal(err)
			}
			relay.gone(ask.Request.ID, &wire.Response{State: wire.StateDenied})
		} else {
			relay.gone(ask.Request.ID, nil)
		}
	}
	return shown
}

// checkShown asserts that the approver showed exactly the request ids want,
// in order, each once and under the AskID minted when it was first seen
// (ids[request id]), and that no more than held were ever shown and open
// at once.
func checkShown(t *testing.T, events []serve.Event, want []string, ids map[string]serve.AskID, held int) {
	t.Helper()
	var shown []string
	open, most := 0, 0
	for _, ev := range events {
		switch ev := ev.(type) {
		case serve.AskQueued:
			shown = append(shown, ev.Ask.Request.ID)
			if id, ok := ids[ev.Ask.Request.ID]; ok && id != ev.Ask.ID {
				t.Errorf("%s shown as ask %d, first seen as %d", ev.Ask.Request.ID, ev.Ask.ID, id)
			}
			open++
			most = max(most, open)
		case serve.Decided, serve.Withdrawn:
			open--
		}
	}
	if strings.Join(shown, " ") != strings.Join(want, " ") {
		t.Fatalf("shown %v, want %v", shown, want)
	}
	if most > held {
		t.Fatalf("%d asks shown at once under a budget of %d", most, held)
	}
}

// An approver that attaches reads the asks stream from its start, which
// holds the asks its relays answered or withdrew with their gone messages
// after them: it shows only the asks still open, never one as queued and
// then decided or withdrawn (a headless approver printed every ask the hub
// still held that way). Asks published after it caught up are shown as
// they come.
func TestAnAttachingApproverShowsOnlyOpenAsks(t *testing.T) {
	th := startHub(t)
	relay := newFakeRelay(t, th, "alpha")
	decided, open, withdrawn := relay.ask(1, "npm publish"), relay.ask(2, "make deploy"), relay.ask(3, "rm -rf build")
	relay.gone(decided, &wire.Response{State: wire.StateDenied, DecidedBy: wire.UserDecision()})
	relay.gone(withdrawn, nil)
	bob := newApprover(t, th, "bob")
	bob.queued(t, open)
	later := relay.ask(4, "npm test")
	bob.queued(t, later)
	for _, ev := range bob.events.Snapshot() {
		switch ev := ev.(type) {
		case serve.AskQueued:
			if id := ev.Ask.Request.ID; id != open && id != later {
				t.Errorf("%s shown as queued", id)
			}
		case serve.Decided, serve.Withdrawn:
			t.Errorf("an ask already gone was reported: %T", ev)
		case serve.Degraded:
			if ev.Problem != "" {
				t.Errorf("degraded while reading the stream: %s", ev.Problem)
			}
		}
	}
}

// Issue 8, scenario 2, at the hub: an approver shows at most its budget of
// asks; the rest wait at the hub (only their names are kept), reported as
// degraded memory, and are shown oldest first, under the AskID minted when
// each was first seen, as earlier ones are decided or withdrawn. An ask
// answered or withdrawn while it waits is never shown.
func TestHubAsksBeyondTheBudgetWaitAndAreShownInOrder(t *testing.T) {
	th := startHub(t)
	alpha := newFakeRelay(t, th, "alpha")
	ann := newApproverWith(t, th, "ann", inbox.Budget{ParkedAsks: 2})
	var reqs []string
	for i := range 6 {
		reqs = append(reqs, alpha.ask(i, "make "+string(rune('a'+i))))
	}
	deg := ann.events.WaitFor(t, "degraded memory", isMemory(func(p string) bool { return p != "" })).(serve.Degraded)
	if !strings.Contains(deg.Problem, "at most 2 asks") {
		t.Fatalf("%+v", deg)
	}
	// Both published after every ask, so the approver has seen all six
	// (the stream is read in order) before these, and before any room frees.
	alpha.gone(reqs[3], &wire.Response{Approved: true, State: wire.StateApproved})
	alpha.gone(reqs[4], nil)

	shown := answerInTurn(t, ann, alpha, 4)
	ann.events.WaitFor(t, "memory recovered", isMemory(func(p string) bool { return p == "" }))
	ids := map[string]serve.AskID{}
	for i, r := range reqs {
		ids[r] = serve.AskID(i + 1) // minted in the order first seen
	}
	checkShown(t, ann.events.Snapshot(), []string{reqs[0], reqs[1], reqs[2], reqs[5]}, ids, 2)
	if shown[3] != reqs[5] {
		t.Fatalf("shown %v", shown)
	}
}

// Past the deferred cap not even the names are kept: those asks are read
// from the stream again once half the waiting ones are shown, still oldest
// first and each once; one withdrawn meanwhile is never shown.
func TestHubAsksBeyondTheDeferredCapAreReadAgain(t *testing.T) {
	th := startHub(t)
	alpha := newFakeRelay(t, th, "alpha")
	ann := newApproverWith(t, th, "ann", inbox.Budget{ParkedAsks: 1, DeferredAsks: 2})
	var reqs []string
	for i := range 7 {
		reqs = append(reqs, alpha.ask(i, "make "+string(rune('a'+i))))
	}
	alpha.gone(reqs[5], nil)
	ann.events.WaitFor(t, "degraded memory", isMemory(func(p string) bool { return strings.Contains(p, "read from the hub again") }))

	answerInTurn(t, ann, alpha, 6)
	ann.events.WaitFor(t, "memory recovered", isMemory(func(p string) bool { return p == "" }))
	// Asks 0–2 were kept when first seen; 3, 4 and 6 got their AskIDs when
	// read again, one each: none is minted for an ask not kept, or for the
	// one withdrawn.
	ids := map[string]serve.AskID{reqs[0]: 1, reqs[1]: 2, reqs[2]: 3, reqs[3]: 4, reqs[4]: 5, reqs[6]: 6}
	checkShown(t, ann.events.Snapshot(), []string{reqs[0], reqs[1], reqs[2], reqs[3], reqs[4], reqs[6]}, ids, 1)
}

// The requests an approver holds stay within its budget however many asks
// the relays publish: 24 asks of about 1 MiB under a 4 MiB budget (before
// decision 0127 every ask was held: BenchmarkHubApproverHeap measures both).
func TestHubApproverHeapStaysWithinTheBudget(t *testing.T) {
	budget := inbox.Budget{ParkedBytes: 4 << 20}
	held := heldHeap(t, 24, mib, budget)
	t.Logf("%.1f MiB held with 24 asks of 1 MiB under a 4 MiB budget", float64(held)/(1<<20))
	if held > 3*uint64(budget.ParkedBytes) {
		t.Fatalf("%d MiB held under a 4 MiB budget", held>>20)
	}
}

// An ask waiting at the hub costs the approver its name only.
func TestHubApproverKeepsOnlyNamesOfWaitingAsks(t *testing.T) {
	const asks = 1000
	per := float64(heldHeap(t, asks, 16<<10, inbox.Budget{ParkedAsks: 1})) / asks
	t.Logf("%.0f bytes held per waiting ask (%d asks of 16 KiB)", per, asks)
	if per > 1024 {
		t.Fatalf("%.0f bytes per waiting ask", per)
	}
}

// BenchmarkHubApproverHeap logs the heap an approver holds with 40 asks of
// about 1 MiB: under a 4 MiB budget, and with all of them held; and with
// the default cap of waiting names full (docs: under 30 MiB).
func BenchmarkHubApproverHeap(b *testing.B) {
	bounded := heldHeap(b, 40, mib, inbox.Budget{ParkedBytes: 4 << 20})
	all := heldHeap(b, 40, mib, inbox.Budget{ParkedBytes: 1 << 30})
	b.Logf("40 asks of 1 MiB: %.1f MiB held under a 4 MiB budget, %.1f MiB with all held", float64(bounded)/(1<<20), float64(all)/(1<<20))
	names := inbox.DefaultBudget.DeferredAsks
	held := heldHeap(b, names+1, 4<<10, inbox.Budget{ParkedAsks: 1})
	b.Logf("%d asks waiting by name: %.1f MiB held, %.0f bytes each", names, float64(held)/(1<<20), float64(held)/float64(names))
}

const mib = 1 << 20

// heldHeap is the heap an approver with budget retains once it has seen
// asks asks of about size bytes of request, beyond what it retains with
// one: each measured in its own run (so the other's approver is gone), with
// the hub stopped (its caches are not the approver's).
func heldHeap[TB interface {
	testing.TB
	Run(string, func(TB)) bool
}](tb TB, asks, size int, budget inbox.Budget) uint64 {
	var base, loaded uint64
	tb.Run("one", func(tb TB) { base = heapSeen(tb, 1, size, budget) })
	tb.Run("all", func(tb TB) { loaded = heapSeen(tb, asks, size, budget) })
	return max(loaded, base) - base
}

func heapSeen(tb testing.TB, asks, size int, budget inbox.Budget) uint64 {
	th := startHub(tb)
	alpha := newFakeRelay(tb, th, "alpha")
	ann := newApproverWith(tb, th, "ann", budget)
	command := "make " + strings.Repeat("x", size/4-1024) // the request holds it four times
	for i := range asks {
		alpha.ask(i, command)
	}
	ann.waitSeen(tb, asks)
	th.stop()
	live := testkit.LiveHeap()
	ann.mu.Lock()
	defer ann.mu.Unlock()
	if m := &ann.memory; m.held.Bytes() > ann.budget.ParkedBytes || m.held.Count()+m.waiting.Len() != asks {
		tb.Fatalf("held %d asks, %d bytes, %d waiting under %+v", m.held.Count(), m.held.Bytes(), m.waiting.Len(), ann.budget)
	}
	return live
}

// waitSeen waits until the approver has seen n asks.
func (ta *testApprover) waitSeen(tb testing.TB, n int) {
	tb.Helper()
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		ta.mu.Lock()
		seen := ta.next
		ta.mu.Unlock()
		if seen == serve.AskID(n) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d asks seen, want %d", seen, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Through real relays: an approver with room for one ask shows the next
// only when the first is answered, and never shows the one another
// approver answered while it waited. Every child gets its answer once.
func TestHubApproverBudgetWithRelays(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApproverWith(t, th, "ann", inbox.Budget{ParkedAsks: 1})
	bob := newApprover(t, th, "bob")
	var children []<-chan pichild.Result
	bobIDs := map[string]serve.AskID{}
	for i := 1; i <= 3; i++ {
		children = append(children, alpha.ask(bash("alpha", i, fmt.Sprintf("make step%d", i))))
		id := fmt.Sprintf("alpha-%d", i)
		bobIDs[id] = bob.queued(t, id).ID
	}
	ann.waitSeen(t, 3)
	ann.events.WaitFor(t, "degraded memory", isMemory(func(p string) bool { return p != "" }))

	// bob answers the ask ann keeps waiting, then ann the one she shows: its
	// gone follows alpha-2's in the stream, so alpha-2 is closed first.
	if err := bob.decide(t, serve.Decision{Ask: bobIDs["alpha-2"], State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, children[1]); resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-1").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, children[0]); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-3").ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, children[2]); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	ann.events.WaitFor(t, "memory recovered", isMemory(func(p string) bool { return p == "" }))
	checkShown(t, ann.events.Snapshot(), []string{"alpha-1", "alpha-3"}, map[string]serve.AskID{"alpha-1": 1, "alpha-3": 3}, 1)
	if recs := alpha.audit(); len(recs) != 3 {
		t.Fatalf("%d audit records, want 3", len(recs))
	}
}

// Degraded memory is reported at once when asks start or stop waiting or
// names stop being kept, and a change of the number only within 5 s is
// left to a timer (docs/reliability.md "Hub approver memory"). The clock is
// the approver's; the timer's own firing is stood in for by calling what it
// calls.
func TestHubMemoryReportsAreSpaced(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	events := serve.NewBroker()
	reports, _ := events.Subscribe()
	a := &Approver{events: events, now: func() time.Time { return clock },
		budget: inbox.Budget{}.WithDefaults(), byID: map[serve.AskID]*hubAsk{}}
	wait := func(n int) {
		for a.memory.waiting.Len() < n {
			a.memory.waiting.PushBack(&hubAsk{})
		}
		for a.memory.waiting.Len() > n {
			a.memory.waiting.Remove(a.memory.waiting.Front())
		}
	}
	a.mu.Lock()
	wait(3)
	a.reportMemory() // starts: at once
	clock = clock.Add(time.Second)
	wait(4)
	a.reportMemory() // only the number changed within 5 s: later
	if a.memory.reportTimer == nil {
		t.Fatal("a changed number within 5 s is neither reported nor scheduled")
	}
	a.memory.reportTimer.Stop() // its firing is stood in for below
	a.memory.reportTimer = nil
	clock = clock.Add(memoryReportEvery)
	a.reportMemory() // what the timer does once due
	clock = clock.Add(time.Second)
	wait(0)
	a.reportMemory() // ends: at once
	a.memory.unkeptFrom = 9
	a.reportMemory() // names no longer kept: at once
	a.reportMemory() // nothing changed
	a.mu.Unlock()
	a.events.Close()
	var got []string
	for ev := range reports {
		if d, ok := ev.(serve.Degraded); ok && d.Area == serve.AreaMemory {
			got = append(got, d.Problem)
		} else {
			t.Fatalf("unexpected %#v", ev)
		}
	}
	if len(got) != 4 || !strings.Contains(got[0], "unshown (3)") || !strings.Contains(got[1], "unshown (4)") || got[2] != "" ||
		!strings.Contains(got[3], "unshown (0)") || !strings.Contains(got[3], "read from the hub again") {
		t.Fatalf("reports %q", got)
	}
}

// The approver asks the hub for at most askPullBatch asks at a time, so
// the asks its client has pulled and not yet taken in are bounded by what
// JetStream may send it (decision 0196): nats.go's default batch of 500
// asks of up to 1.06 MiB each let a backlog fill the client's buffer past
// its slow-consumer limit.
func TestHubApproverPullsABoundedBatchOfAsks(t *testing.T) {
	th := startHub(t)
	nc, err := th.h.Admin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	pulls := testkit.NewRecorder[int]()
	sub, err := nc.Subscribe("$JS.API.CONSUMER.MSG.NEXT."+hub.AsksStream+".*", func(m *nats.Msg) {
		var req struct {
			Batch int `json:"batch"`
		}
		if json.Unmarshal(m.Data, &req) == nil {
			pulls.Add(req.Batch)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	alpha := newFakeRelay(t, th, "alpha")
	for i := range 3 * askPullBatch {
		alpha.ask(i, "make")
	}
	ann := newApprover(t, th, "ann")
	ann.events.WaitForN(t, "every ask shown", isQueued, 3*askPullBatch)
	// The pull requests reach this subscriber on its own connection, maybe
	// after the asks reached the approver: wait for one per batch.
	pulls.WaitForN(t, "a pull request per batch at least", func(int) bool { return true }, 3)
	batches := pulls.Snapshot()
	for _, b := range batches {
		if b < 1 || b > askPullBatch {
			t.Fatalf("pull requests for %v asks, want 1 to %d each", batches, askPullBatch)
		}
	}
}

// BenchmarkHubApproverBacklogPeak logs the peak heap in use while an
// approver with an 8 MiB budget reads a backlog of 150 asks of 1 MiB that
// wait at the hub (which runs in this process: its caches count too).
// What the client has pulled and not yet taken in is bounded by
// askPullBatch (decision 0196).
func BenchmarkHubApproverBacklogPeak(b *testing.B) {
	const asks = 150
	th := startHub(b)
	alpha := newFakeRelay(b, th, "alpha")
	command := "make " + strings.Repeat("x", mib/4-1024)
	for i := range asks {
		alpha.ask(i, command)
	}
	runtime.GC()
	var peak uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	ann := newApproverWith(b, th, "ann", inbox.Budget{ParkedBytes: 8 << 20})
	ann.waitSeen(b, asks)
	close(stop)
	<-sampled
	b.Logf("%d asks of 1 MiB waiting at the hub, read under an 8 MiB budget: peak heap in use %d MiB", asks, peak>>20)
}
