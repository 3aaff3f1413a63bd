package serve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/wire"
)

// A stalled front end (a frozen terminal, a blocked stdout) must not make
// the process keep every request it answers automatically meanwhile: past
// MaxBufferedEvents those answers, arrivals and refused files are counted
// in one Skipped event, while what a front end needs for its queue is kept
// in order (decision 0118).
func TestAStalledConsumerGetsCountsNotEveryRequest(t *testing.T) {
	q := NewEventQueue()
	defer q.Close()
	big := strings.Repeat("x", 64<<10)
	ask := func(id AskID) Ask {
		return Ask{Arrived: inbox.Arrived{ID: id, Request: &wire.Request{ID: "r", Value: &big}}}
	}
	const answered = 20 * MaxBufferedEvents
	for i := range answered {
		id := AskID(i + 1)
		q.Push(Arrived{Ask: ask(id)})
		q.Push(Decided{Ask: ask(id), Response: wire.Response{Approved: i%2 == 0}, Auto: true})
	}
	queued := AskID(answered + 1)
	q.Push(AskQueued{Ask: ask(queued)}) // waits for a person: kept
	q.Push(Invalid{})

	q.mu.Lock()
	buffered := len(q.buf)
	q.mu.Unlock()
	// The pump holds one event and the channel 64 more.
	if buffered > MaxBufferedEvents+4 {
		t.Fatalf("%d events buffered for a stalled consumer, over %d", buffered, MaxBufferedEvents)
	}

	var got []Event
	for seen := false; !seen; {
		ev := <-q.Out()
		got = append(got, ev)
		a, ok := ev.(AskQueued)
		seen = ok && a.Ask.ID == queued // the Invalid pushed after it is counted in the Skipped before it
	}
	total := Skipped{}
	var kept []Event
	for _, ev := range got {
		if sk, ok := ev.(Skipped); ok {
			total = total.add(sk)
			continue
		}
		kept = append(kept, ev)
		switch ev := ev.(type) {
		case Arrived:
			total.Arrived++
		case Decided:
			if !ev.Queued && ev.Response.Approved {
				total.AutoApproved++
			} else if !ev.Queued {
				total.AutoDenied++
			}
		}
	}
	if total.Arrived != answered || total.AutoApproved != answered/2 || total.AutoDenied != answered/2 || total.Invalid != 1 {
		t.Fatalf("counted %+v for %d answers and one refused file", total, answered)
	}
	if n := len(kept); n == 0 {
		t.Fatal("nothing kept")
	} else if q, ok := kept[n-1].(AskQueued); !ok || q.Ask.ID != queued {
		t.Fatalf("the ask waiting for a person was not kept: %#v", kept[n-1])
	}
}

// Behind a stalled consumer, an ask answered or gone before the consumer
// was sent it leaves the buffer with its answer (else a person's queue
// answered elsewhere, or a grant's, would pile up in pairs), and only the
// latest grants wait.
func TestAStalledConsumerIsNotSentAsksAlreadySettled(t *testing.T) {
	q := NewEventQueue()
	defer q.Close()
	for range MaxBufferedEvents + 100 { // the pump and the channel hold 65
		q.Push(Serving{})
	}
	q.mu.Lock()
	base := len(q.buf)
	q.mu.Unlock()
	const asks = 1000
	for i := range asks {
		id := AskID(i + 1)
		q.Push(AskQueued{Ask: Ask{Arrived: inbox.Arrived{ID: id}}})
		if i%2 == 0 {
			q.Push(Decided{Ask: Ask{Arrived: inbox.Arrived{ID: id}}, Queued: true, Response: wire.Response{Approved: true}})
		} else {
			q.Push(Withdrawn{Withdrawn: inbox.Withdrawn{ID: id}, Pending: true})
		}
		q.Push(GrantsChanged{Grants: map[string][]wire.Grant{"s": {{Surface: "bash", Pattern: fmt.Sprint(i)}}}})
	}
	q.mu.Lock()
	buffered := len(q.buf)
	q.mu.Unlock()
	if buffered > base+2 { // a Skipped and the latest grants
		t.Fatalf("%d events buffered after %d asks settled behind a stalled consumer", buffered, asks)
	}
	q.Push(ServedElsewhere{}) // marks the end
	var total Skipped
	var grants []GrantsChanged
	for done := false; !done; {
		switch ev := (<-q.Out()).(type) {
		case AskQueued, Decided, Withdrawn:
			t.Fatalf("sent %#v of an ask settled before it was sent", ev)
		case GrantsChanged:
			grants = append(grants, ev)
		case Skipped:
			total = total.add(ev)
		case ServedElsewhere:
			done = true
		}
	}
	if total.Approved != asks/2 || total.Expired != asks/2 {
		t.Fatalf("counted %+v for %d settled asks", total, asks)
	}
	if len(grants) != 1 || grants[0].Grants["s"][0].Pattern != fmt.Sprint(asks-1) {
		t.Fatalf("grants sent: %+v, want only the latest", grants)
	}
}

// Folded answers are counted by who decided: a person's answer (or an
// unattended one) to an ask the consumer was never sent is not counted as
// automatic, and an automatic answer to a queued ask (a rule after a
// policy change) is not counted as a person's.
func TestFoldedAnswersAreCountedByWhoDecided(t *testing.T) {
	q := NewEventQueue()
	defer q.Close()
	for range MaxBufferedEvents + 100 { // the pump and the channel hold 65
		q.Push(Serving{})
	}
	decided := []Decided{
		{Queued: true, Response: wire.Response{Approved: true}},             // a person approved
		{Queued: true, Response: wire.Response{}},                           // a person denied
		{Queued: true, Response: wire.Response{}},                           // a person denied
		{Queued: true, Auto: true, Response: wire.Response{Approved: true}}, // a rule, after a policy change
		{Auto: true, Response: wire.Response{}},                             // a rule, never queued
		{Auto: true, Response: wire.Response{}},                             // a rule, never queued
		{Auto: true, Response: wire.Response{}},                             // a rule, never queued
		{Response: wire.Response{Approved: true}, Approver: "hub approver"}, // a person elsewhere
		// Nobody: a headless denial, counted as the status counts it unfolded.
		{Queued: true, Response: wire.Response{DecidedBy: wire.UnavailableDecision("no approver")}},
	}
	for i, d := range decided {
		d.Ask = Ask{Arrived: inbox.Arrived{ID: AskID(i + 1)}}
		if d.Queued {
			q.Push(AskQueued{Ask: d.Ask})
		}
		q.Push(d)
	}
	q.Push(ServedElsewhere{}) // marks the end
	var total Skipped
	for done := false; !done; {
		switch ev := (<-q.Out()).(type) {
		case AskQueued, Decided:
			t.Fatalf("sent %#v, which should have been folded", ev)
		case Skipped:
			total = total.add(ev)
		case ServedElsewhere:
			done = true
		}
	}
	want := Skipped{Approved: 2, Denied: 2, AutoApproved: 1, AutoDenied: 3, Unavailable: 1}
	if total != want {
		t.Fatalf("counted %+v, want %+v", total, want)
	}
}

// Behind a stalled consumer only the latest scopes of each ask wait: policy
// reloads cannot pile them up (decision 0229).
func TestAStalledConsumerGetsOnlyTheLatestScopesOfAnAsk(t *testing.T) {
	q := NewEventQueue()
	defer q.Close()
	for range MaxBufferedEvents + 100 {
		q.Push(Serving{})
	}
	q.mu.Lock()
	base := len(q.buf)
	q.mu.Unlock()
	for i := range 100 {
		q.Push(ScopesChanged{Ask: 7, Scopes: Scopes{Rev: i + 1}})
		q.Push(ScopesChanged{Ask: 8, Scopes: Scopes{Rev: i + 1}})
	}
	q.mu.Lock()
	buffered := len(q.buf)
	q.mu.Unlock()
	if buffered > base+2 { // the pump may have taken more since base
		t.Fatalf("%d scope changes buffered for 2 asks", buffered-base)
	}
	q.Push(ServedElsewhere{})
	var got []ScopesChanged
	for done := false; !done; {
		switch ev := (<-q.Out()).(type) {
		case ScopesChanged:
			got = append(got, ev)
		case ServedElsewhere:
			done = true
		}
	}
	if len(got) != 2 || got[0].Scopes.Rev != 100 || got[1].Scopes.Rev != 100 {
		t.Fatalf("sent %+v, want the latest of each ask", got)
	}
}
