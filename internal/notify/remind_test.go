package notify

import (
	"testing"
	"time"
)

// An ask answered and queued again under the same AskID (a hub ask shown
// again) while its old timer was already firing: the old fire is stale. It
// must neither remind early nor disarm the new timer, so the ask is
// reminded once, when the new timer fires.
func TestAStaleReminderIsNotSent(t *testing.T) {
	rs := newReminders(time.Hour) // no timer fires in the test; fires are handed to take
	defer rs.stop()
	rs.arm(1)
	stale := reminder{id: 1, gen: rs.armed[1].gen} // fired, not yet taken by the loop
	rs.cancel(1)
	rs.arm(1)
	if rs.take(stale) {
		t.Fatal("the old timer's fire reminded of the ask queued again")
	}
	cur, ok := rs.armed[1]
	if !ok {
		t.Fatal("the old timer's fire disarmed the new one")
	}
	fresh := reminder{id: 1, gen: cur.gen}
	if !rs.take(fresh) {
		t.Fatal("the new timer's fire did not remind")
	}
	if rs.take(fresh) {
		t.Fatal("one fire reminded twice")
	}
}
