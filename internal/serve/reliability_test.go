package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
)

// Scenario 6 of issue 8: a log that ends without a newline (a crash
// mid-append) must not swallow the next record.
func TestTornAuditTailIsMovedAsideAndReported(t *testing.T) {
	whole := `{"askId":1,"requestId":"1791279012345-old-1","state":"approved"}` + "\n"
	torn := `{"askId":2,"requestId":"1791279012345-old-2","sta`
	h := startServer(t, options{before: func(h *harness) {
		if err := os.MkdirAll(h.state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.state, "audit.jsonl"), []byte(whole+torn), 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	rep := h.rec.WaitFor(t, "repaired", func(ev Event) bool { _, ok := ev.(Repaired); return ok }).(Repaired)
	if rep.Area != AreaAudit || !strings.Contains(rep.What, "49 bytes") {
		t.Errorf("repair report %+v", rep)
	}
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	h.send(intent("1791279012345-tt-1", "impl", "bash", "ls"))
	h.await("1791279012345-tt-1")

	// auditLines fails on any line that does not parse.
	if recs := h.auditFor("1791279012345-tt-1"); len(recs) != 1 {
		t.Fatalf("the new decision has no parseable record: %+v", recs)
	}
	if recs := h.auditFor("1791279012345-old-1"); len(recs) != 1 {
		t.Fatalf("the whole record before the tear was lost: %+v", recs)
	}
	moved, _ := filepath.Glob(filepath.Join(h.state, "audit.jsonl.torn-*"))
	if len(moved) != 1 {
		t.Fatalf("torn fragment files %v", moved)
	}
	data, err := os.ReadFile(moved[0])
	if err != nil || !bytes.Equal(data, []byte(torn)) {
		t.Fatalf("fragment kept as %q, %v", data, err)
	}
	if st, err := os.Stat(moved[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("fragment mode %v, %v", st.Mode(), err)
	}
}
