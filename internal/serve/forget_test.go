package serve

import "testing"

// A request can reappear under the same file name (same key) while the
// answer to the earlier one is still settling; settling the earlier one must
// not drop the later ask.
func TestSettlingAnEarlierAskKeepsALaterAskWithTheSameKey(t *testing.T) {
	s := &Server{asks: map[string]*pending{}, events: newEventQueue()}
	earlier := &pending{Ask: Ask{Key: "root/same.json"}, seq: 1, deciding: true}
	later := &pending{Ask: Ask{Key: "root/same.json"}, seq: 2}
	s.asks[later.Key] = later
	s.expire(earlier)
	if s.forget(earlier) {
		t.Error("forgot an ask that was not there")
	}
	if s.asks[later.Key] != later {
		t.Fatal("the later ask was dropped")
	}
	s.events.close()
	for ev := range s.events.out {
		t.Errorf("unexpected event %#v", ev)
	}
	if !s.forget(later) || len(s.asks) != 0 {
		t.Fatal("forget(later) did not remove it")
	}
}
