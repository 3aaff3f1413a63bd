package serve

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// A subscriber that never reads must not hold up publishing nor another
// subscriber: the reading one gets every event one by one, while the
// stalled one's buffer folds on its own (decision 0180).
func TestAStalledSubscriberDoesNotHoldUpAnother(t *testing.T) {
	b := NewBroker()
	stalled, cancel := b.Subscribe()
	defer cancel()
	reader, _ := b.Subscribe()
	const n = 3 * MaxBufferedEvents
	for i := range n {
		id := AskID(i + 1)
		b.Publish(Arrived{Ask: Ask{Arrived: inbox.Arrived{ID: id}}})
		// Read each before the next is published, so the reader never
		// falls behind and nothing of its own is folded.
		if a, ok := (<-reader).(Arrived); !ok || a.Ask.ID != id {
			t.Fatalf("reader got %#v, want the arrival of %d", a, id)
		}
	}
	b.Publish(Serving{})
	b.Close()
	var total Skipped
	arrivals := 0
	for ev := range stalled {
		switch ev := ev.(type) {
		case Skipped:
			total = total.add(ev)
		case Arrived:
			arrivals++
		}
	}
	if total.Arrived == 0 || total.Arrived+arrivals != n {
		t.Fatalf("stalled subscriber: %d arrivals and %+v counted, want %d in all with some counted", arrivals, total, n)
	}
	if ev, ok := <-reader; !ok || !reflect.DeepEqual(ev, Serving{}) {
		t.Fatalf("reader's last event %#v", ev)
	}
	if _, open := <-reader; open {
		t.Fatal("reader's channel still open after Close")
	}
}

// A subscription made before Run gets the same events as the front end,
// even while another subscriber stalls.
func TestASubscriberBeforeRunMissesNothing(t *testing.T) {
	var early <-chan Event
	var stalledCancel func()
	h := startServer(t, options{before: func(h *harness) {
		early, _ = h.s.Subscribe()
		_, stalledCancel = h.s.Subscribe()
	}})
	defer stalledCancel()
	var got []Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range early {
			got = append(got, ev)
		}
	}()
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls*", "global", ""))
	h.send(intent("1791279012345-allow-1", "impl", "bash", "ls"))
	h.await("1791279012345-allow-1")
	h.send(intent("1791279012345-ask-1", "impl", "bash", "make"))
	a := h.queued("1791279012345-ask-1")
	if err := h.s.Decide(Decision{Ask: a.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	h.await("1791279012345-ask-1")
	h.decided("1791279012345-ask-1")
	h.shutdown()
	<-done
	if front := h.rec.Snapshot(); !reflect.DeepEqual(typesOf(got), typesOf(front)) {
		t.Fatalf("subscriber got %v\nfront end got %v", typesOf(got), typesOf(front))
	}
}

func typesOf(evs []Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = reflect.TypeOf(ev).Name()
	}
	return out
}

// Closing the broker ends every pump: one read to the end, one cancelled
// while stalled, one cancelled after Close without reading.
func TestNoGoroutineOutlivesTheBroker(t *testing.T) {
	before := runtime.NumGoroutine()
	b := NewBroker()
	drained, _ := b.Subscribe()
	_, cancelEarly := b.Subscribe()
	_, cancelLate := b.Subscribe()
	for range 200 {
		b.Publish(Serving{})
	}
	cancelEarly()
	b.Close()
	for range drained {
	}
	cancelLate()
	after, _ := b.Subscribe() // after Close: already closed
	if _, open := <-after; open {
		t.Fatal("a subscription after Close is open")
	}
	deadline := time.Now().Add(testkit.WaitLimit)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before the broker", runtime.NumGoroutine(), before)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkBrokerPublish is the serving loop's cost of one event with the
// front end alone and with two more subscribers (a status file and a
// notifier), each drained by its own reader (docs/performance.md).
func BenchmarkBrokerPublish(b *testing.B) {
	for _, subs := range []int{1, 3} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			br := NewBroker()
			var drained sync.WaitGroup
			for range subs {
				ch, _ := br.Subscribe()
				drained.Go(func() {
					for range ch {
					}
				})
			}
			ev := Arrived{Ask: Ask{Arrived: inbox.Arrived{ID: 1}}}
			b.ReportAllocs()
			for b.Loop() {
				br.Publish(ev)
			}
			br.Close()
			drained.Wait()
		})
	}
}

// Scanned follows the AskQueued of every ask the first look found, and is
// whole only when none of them went back to disk beyond the memory budget:
// a relay counts on both to know what its previous process left at the hub
// is gone (decision 0275).
func TestTheFirstLookIsReportedAfterItsAsks(t *testing.T) {
	for _, parked := range []int{2, 1} {
		h := startServer(t, options{
			config: func(c *Config) { c.Inbox.Budget.ParkedAsks = parked },
			before: func(h *harness) {
				h.send(intent("1791279012345-fl-1", "impl", "bash", "make"))
				h.send(intent("1791279012345-fl-2", "impl", "bash", "make"))
			},
		})
		h.rec.WaitFor(t, "the first look", func(ev Event) bool { _, ok := ev.(Scanned); return ok })
		events := h.rec.Snapshot()
		i := slices.IndexFunc(events, func(ev Event) bool { _, ok := ev.(Scanned); return ok })
		queued := 0
		for _, ev := range events[:i] {
			if _, ok := ev.(AskQueued); ok {
				queued++
			}
		}
		if queued != parked || events[i].(Scanned).Whole != (parked == 2) {
			t.Errorf("%d parked at most: %d queued before %+v", parked, queued, events[i])
		}
	}
}
