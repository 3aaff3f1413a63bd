package serve

import (
	"testing"

	"github.com/permtui/permtui/internal/inbox"
)

// A request can reappear under the same file name while the answer to the
// earlier one is still settling; it is another delivery with its own AskID,
// and settling the earlier one must not drop it.
func TestSettlingAnEarlierAskKeepsALaterAskFromTheSameFile(t *testing.T) {
	s := &Server{asks: map[AskID]*pending{}, events: NewBroker()}
	events, _ := s.events.Subscribe()
	file := inbox.Arrived{Session: "root", Path: "/inbox/requests/same.json"}
	earlier := &pending{Ask: Ask{Arrived: file}, deciding: true}
	earlier.ID = 1
	later := &pending{Ask: Ask{Arrived: file}}
	later.ID = 2
	s.asks[later.ID] = later
	s.expire(earlier)
	if s.forget(earlier.ID) {
		t.Error("forgot an ask that was not there")
	}
	if s.asks[later.ID] != later {
		t.Fatal("the later ask was dropped")
	}
	s.events.Close()
	for ev := range events {
		t.Errorf("unexpected event %#v", ev)
	}
	if !s.forget(later.ID) || len(s.asks) != 0 {
		t.Fatal("forget(later) did not remove it")
	}
}
