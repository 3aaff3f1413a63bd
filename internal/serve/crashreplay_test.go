package serve

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
)

// A crash between writing a response and removing its request leaves both
// files, and no delivery line (written lazily). The restarted server
// replays the recorded decision and finds that very answer unread in
// responses/: it says the answer recorded before the restart waits for its
// child, not that an earlier answer is in the way. The child reads it,
// removes its request, and the ask ends with no second file (decision 0201).
func TestAnAnswerWrittenBeforeACrashIsSaidToWaitForItsChild(t *testing.T) {
	const id = "1791279012345-crash-2"
	first := startServer(t, options{})
	first.judge.set("rm x", ruleVerdict(resolve.Deny, "", "rm *", "global", "no rm"))
	req := intent(id, "impl", "bash", "rm x")
	first.send(req)
	first.decided(id)
	first.shutdown() // the delivery line is written by now
	dropDeliveries(t, AuditPath(first.state))
	first.send(req) // the request the crash did not remove

	second := startServer(t, options{reuse: first})
	w := second.rec.WaitFor(t, "the wait said", func(ev Event) bool { _, ok := ev.(WriteFailed); return ok }).(WriteFailed)
	if !w.Unread || !strings.Contains(w.Err, "the answer recorded before this permtui started") || strings.Contains(w.Err, "an earlier answer") {
		t.Fatalf("the wait is said as %+v", w)
	}
	if resp := second.await(id); resp.Approved || resp.DenialReason != "no rm" {
		t.Fatalf("the child read %+v, not the recorded deny", resp)
	}
	second.rec.WaitFor(t, "the ask ends", func(ev Event) bool { e, ok := ev.(Withdrawn); return ok && e.ID == w.Ask })
	second.shutdown()
	if _, err := os.Stat(second.layout.ResponsePath(rootID, id)); !os.IsNotExist(err) {
		t.Errorf("a second answer was written: %v", err)
	}
	if n := second.rec.Count(func(ev Event) bool { _, ok := ev.(WriteFailed); return ok }); n != 1 {
		t.Errorf("the wait was said %d times", n)
	}
	if recs := second.auditFor(id); len(recs) != 1 {
		t.Errorf("decisions for one request: %+v", recs)
	}
}

// dropDeliveries removes the delivery lines from an audit log, as a crash
// before the lazy write reached the disk would have.
func dropDeliveries(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for line := range bytes.Lines(data) {
		if !bytes.Contains(line, []byte(`"kind":"`+deliveryKind+`"`)) {
			kept = append(kept, line...)
		}
	}
	if len(kept) == len(data) {
		t.Fatal("no delivery line to drop")
	}
	if err := os.WriteFile(path, kept, 0o600); err != nil {
		t.Fatal(err)
	}
}
