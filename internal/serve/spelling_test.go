package serve

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// A 40.x child's payload.request.matchedSpelling reaches the console with
// the ask but, like every command-bearing field, none of permtui's logs:
// not permtui.log, not the audit log (decision 0028; the headless lines are
// checked in package headless).
func TestMatchedSpellingIsKeptButNeverLogged(t *testing.T) {
	const spelling = "rm /w/secret-spelling"
	var logBuf testkit.SyncBuffer
	h := startServer(t, options{config: func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}})
	req := intent("1791279012345-spell-1", "impl", "bash", "rm ./x")
	req.Payload = &wire.Payload{Kind: "bash", Request: wire.PayloadRequest{
		Surface: "bash", Value: "rm ./x", MatchedPattern: ptr("rm /w/*"), MatchedSpelling: ptr(spelling),
	}, Evidence: []wire.Evidence{}, Annotations: []wire.Annotation{}}
	h.send(req)
	ask := h.queued(req.ID)
	if got := ask.Request.Payload.Request.MatchedSpelling; got == nil || *got != spelling {
		t.Fatalf("the queued ask lost matchedSpelling: %v", got)
	}
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	h.await(req.ID)
	h.decided(req.ID)
	audit, err := os.ReadFile(filepath.Join(h.state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"audit": string(audit), "permtui.log": logBuf.String()} {
		if strings.Contains(text, "secret-spelling") {
			t.Errorf("%s carries the spelling:\n%s", name, text)
		}
	}
}
