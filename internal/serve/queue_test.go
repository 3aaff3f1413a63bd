package serve

import (
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
	q.Push(AskQueued{Ask: ask(queued)})
	q.Push(Decided{Ask: ask(queued), Queued: true})
	q.Push(Invalid{})

	q.mu.Lock()
	buffered := len(q.buf)
	q.mu.Unlock()
	// The pump holds one event and the channel 64 more.
	if buffered > MaxBufferedEvents+4 {
		t.Fatalf("%d events buffered for a stalled consumer, over %d", buffered, MaxBufferedEvents)
	}

	var got []Event
	for len(got) == 0 || !isInvalidOrSkipped(got[len(got)-1]) {
		got = append(got, <-q.Out())
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
				total.Approved++
			} else if !ev.Queued {
				total.Denied++
			}
		}
	}
	if total.Arrived != answered || total.Approved != answered/2 || total.Denied != answered/2 || total.Invalid != 1 {
		t.Fatalf("counted %+v for %d answers and one refused file", total, answered)
	}
	n := len(kept)
	if n < 2 {
		t.Fatalf("kept %d events", n)
	}
	if q, ok := kept[n-2].(AskQueued); !ok || q.Ask.ID != queued {
		t.Fatalf("the queued ask was not kept: %#v", kept[n-2])
	}
	if d, ok := kept[n-1].(Decided); !ok || d.Ask.ID != queued {
		t.Fatalf("the answer to the queued ask was not kept: %#v", kept[n-1])
	}
}

func isInvalidOrSkipped(ev Event) bool {
	sk, ok := ev.(Skipped)
	return ok && sk.Invalid > 0
}
