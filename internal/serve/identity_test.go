package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// A child retries under the same request id after its first request was
// withdrawn: the later request is a new ask with its own identity, and a
// decision meant for the withdrawn one never answers it (issue 7).
func TestARequestReusingAWithdrawnFileNameIsANewAsk(t *testing.T) {
	var logged testkit.SyncBuffer
	h := startServer(t, options{config: func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&logged, nil)) }})
	path := h.send(intent("r-1", "impl", "bash", "make"))
	first := h.queued("r-1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "withdrawn", func(ev Event) bool { w, ok := ev.(Withdrawn); return ok && w.ID == first.ID })

	h.send(intent("r-1", "impl", "bash", "rm -rf /"))
	second := h.rec.WaitFor(t, "second r-1", func(ev Event) bool {
		q, ok := ev.(AskQueued)
		return ok && q.Ask.Request.AccessIntent.MatchValues[0] == "rm -rf /"
	}).(AskQueued).Ask
	if second.ID == first.ID {
		t.Fatalf("the new request has the withdrawn ask's identity %v", second.ID)
	}
	// A person who pressed y on the withdrawn `make` must not approve `rm -rf /`.
	if err := h.s.Decide(Decision{Ask: first.ID, State: wire.StateApproved}); !errors.Is(err, ErrUnknownAsk) {
		t.Fatalf("deciding the withdrawn ask = %v, want ErrUnknownAsk", err)
	}
	if err := h.s.Decide(Decision{Ask: second.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := h.await("r-1"); resp.Approved || resp.State != wire.StateDenied {
		t.Fatalf("%+v", resp)
	}
	recs := h.auditFor("r-1")
	if len(recs) != 1 || recs[0]["state"] != "denied" || recs[0]["askId"] != float64(second.ID) {
		t.Fatalf("audit %+v", recs)
	}
	h.decided("r-1") // logged before it is reported
	for _, want := range []string{
		fmt.Sprintf(`"msg":"withdrawn","ask":%d`, first.ID),
		fmt.Sprintf(`"msg":"answered","ask":%d,"request":"r-1"`, second.ID),
	} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logged.String())
		}
	}
}

// The same, when the child rewrites the file under the same name without
// deleting it first (or faster than the inbox notices): the person's y on
// `make` never answers the `rm -rf /` that took its place.
func TestADecisionNeverAnswersTheFileThatReplacedItsAsk(t *testing.T) {
	h := startServer(t, options{})
	h.send(intent("r-2", "impl", "bash", "make"))
	first := h.queued("r-2")
	h.send(intent("r-2", "impl", "bash", "rm -rf /"))
	if err := h.s.Decide(Decision{Ask: first.ID, State: wire.StateApproved}); !errors.Is(err, ErrUnknownAsk) && !errors.Is(err, ErrExpired) {
		t.Fatalf("deciding the replaced ask = %v, want it expired or unknown", err)
	}
	second := h.rec.WaitFor(t, "second r-2", func(ev Event) bool {
		q, ok := ev.(AskQueued)
		return ok && q.Ask.Request.AccessIntent.MatchValues[0] == "rm -rf /"
	}).(AskQueued).Ask
	if err := h.s.Decide(Decision{Ask: second.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := h.await("r-2"); resp.Approved {
		t.Fatalf("%+v", resp)
	}
	recs := h.auditFor("r-2")
	if len(recs) != 1 || recs[0]["state"] != "denied" || recs[0]["askId"] != float64(second.ID) {
		t.Fatalf("audit %+v", recs)
	}
}
