package simulate

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// recorded writes an audit log the way serve writes it: one JSON record per
// decision, plus a rule line and a record from before facts were kept.
func recorded(t *testing.T, dir string) string {
	t.Helper()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec := func(agent, surface, value string, approved bool, by *wire.DecisionSource, ago time.Duration) serve.AuditRecord {
		state := wire.StateDenied
		if approved {
			state = wire.StateApproved
		}
		return serve.AuditRecord{
			RequestID: "r-" + value, Agent: agent, Surface: surface, MatchValues: []string{value},
			State: state, Approved: approved, DecidedBy: by, DecidedAt: now.Add(-ago).UnixMilli(),
			Facts: &serve.AuditFacts{Principal: agent, Surface: surface, MatchValues: []string{value}, RequesterCwd: "/w"},
		}
	}
	user := wire.UserDecision()
	rule := wire.RuleDecision("bash", nil, nil)
	recs := []serve.AuditRecord{
		rec("builder", "bash", "npm install left-pad", true, user, 3*time.Hour),
		rec("builder", "bash", "npm install evil", false, user, 2*time.Hour),
		rec("reviewer", "bash", "npm install x", true, user, time.Hour),
		rec("reviewer", "bash", "git status", true, rule, time.Hour),
		rec("builder", "bash", "rm -rf /", false, user, time.Minute),
	}
	old := serve.AuditRecord{RequestID: "old", Agent: "builder", Surface: "bash", MatchValues: []string{"npm install y"}, State: wire.StateApproved, DecidedAt: now.UnixMilli()}
	path := filepath.Join(dir, "audit.jsonl")
	var data []byte
	for _, r := range append(recs, old) {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		data = append(append(data, line...), '\n')
	}
	data = append(data, `{"kind":"rule","surface":"bash","pattern":"git *","action":"allow","scope":"global","file":"/x","by":"me","via":"rule add","writtenAt":1}`+"\n"...)
	testkit.WriteFile(t, path, data)
	return path
}

func TestReplayRecordedLog(t *testing.T) {
	dir := t.TempDir()
	path := recorded(t, dir)
	l, err := ReadLog(path, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Asks) != 5 || l.NoFacts != 1 || l.Bad != 0 {
		t.Fatalf("asks %d, no facts %d, bad %d", len(l.Asks), l.NoFacts, l.Bad)
	}
	agentDir := filepath.Join(dir, "agent")
	global := resolve.GlobalConfigPath(agentDir)
	testkit.WriteFile(t, global, []byte(`{"permission":{"bash":{"*":"ask","git *":"allow"}}}`))
	opts := resolve.LoadOptions{AgentDir: agentDir, Home: "/home/u"}
	cand := opts
	cand.Overlay = map[string][]byte{global: []byte(`{"permission":{"bash":{"*":"ask","git *":"allow","npm install *":"allow"}}}`)}

	rep := Replay(l, resolve.Load(opts), resolve.Load(cand))
	if rep.Current != (Counts{Allow: 1, Ask: 4}) || rep.Candidate != (Counts{Allow: 4, Ask: 1}) {
		t.Errorf("current %+v, candidate %+v", rep.Current, rep.Candidate)
	}
	if ch := rep.Changed(); len(ch) != 3 {
		t.Errorf("changed %d, want the three npm installs", len(ch))
	}
	denied := rep.DeniedNowAllowed()
	if len(denied) != 1 || denied[0].Record.Facts.MatchValues[0] != "npm install evil" {
		t.Errorf("denied now allowed: %+v", denied)
	}
	cov := rep.CoverageOf(func(r *resolve.RuleRef) bool { return r.Pattern == "npm install *" })
	if len(cov.Decided) != 3 {
		t.Errorf("coverage %d", len(cov.Decided))
	}

	recent, err := ReadLog(path, time.Date(2026, 12, 1, 11, 30, 0, 0, time.UTC))
	if err != nil || len(recent.Asks) != 1 {
		t.Errorf("since: %d asks, %v", len(recent.Asks), err)
	}
	if missing, err := ReadLog(filepath.Join(dir, "none.jsonl"), time.Time{}); err != nil || len(missing.Asks) != 0 {
		t.Errorf("missing log: %+v %v", missing, err)
	}
	if err := os.WriteFile(path, []byte("{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if broken, err := ReadLog(path, time.Time{}); err != nil || broken.Bad != 1 {
		t.Errorf("broken log: %+v %v", broken, err)
	}
}
