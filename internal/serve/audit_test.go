package serve

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// TestAuditRecordsTheFactsForReplay: a decision's record carries the
// accessIntent as sent (what permtui simulate replays); a request without
// one records no facts.
func TestAuditRecordsTheFactsForReplay(t *testing.T) {
	h := startServer(t, options{})
	h.judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	req := intent("1791279012345-facts-1", "impl", "bash", "ls")
	req.AccessIntent.Principal.AgentName = "builder"
	req.AccessIntent.Floor = ptr("<indirection-bash-wrapper>")
	h.send(req)
	h.await("1791279012345-facts-1")
	bare := intent("1791279012345-facts-2", "impl", "bash", "ls")
	bare.AccessIntent = nil
	h.send(bare)
	ask := h.queued("1791279012345-facts-2")
	if err := h.s.Decide(Decision{Ask: ask.ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	h.await("1791279012345-facts-2")

	var recs []AuditRecord
	if bad, err := ReadAudit(filepath.Join(h.state, "audit.jsonl"), func(r AuditRecord) { recs = append(recs, r) }); bad != 0 || err != nil {
		t.Fatalf("bad %d, err %v", bad, err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	got := recs[0].Facts
	if got == nil || got.Principal != "builder" || got.Surface != "bash" || len(got.MatchValues) != 1 || got.MatchValues[0] != "ls" ||
		got.RequesterCwd != "/w" || got.Floor == nil || *got.Floor != "<indirection-bash-wrapper>" {
		t.Errorf("facts %+v", got)
	}
	if recs[1].Facts != nil {
		t.Errorf("a request without accessIntent recorded facts %+v", recs[1].Facts)
	}
}

// appendRuleRecord records rec as 'rule add' does.
func appendRuleRecord(stateDir string, rec RuleRecord) error {
	l, err := OpenRuleLog(stateDir)
	if err != nil {
		return err
	}
	return l.Append(rec)
}

func TestRuleRecordsSitBesideDecisions(t *testing.T) {
	dir := t.TempDir()
	if err := appendRuleRecord(dir, RuleRecord{Surface: "bash", Pattern: "ls", Action: "allow", Scope: "global", File: "/x", By: "me", Via: "rule add"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil || !strings.Contains(string(data), `"kind":"rule"`) {
		t.Fatalf("%s %v", data, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "audit.jsonl")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	log := string(data) + `{"requestId":"r","state":"denied"}` + "\n" + `{"requestId":` + "\n"
	var n int
	bad, err := readAudit(strings.NewReader(log), func(r AuditRecord) { n++ }, false)
	if n != 1 || bad != 1 || err != nil {
		t.Errorf("decisions %d, bad %d, err %v", n, bad, err)
	}
}

// TestReadAuditSkipsAnOverlongLine: a request under 1 MiB whose values are
// '<' is recorded with each one escaped to six bytes, twice (the values and
// the facts): a line above the read cap. It is counted as bad and the lines
// after it are read, so one hostile child cannot stop simulate, rule add and
// the console's history from reading the log.
func TestReadAuditSkipsAnOverlongLine(t *testing.T) {
	long := `{"requestId":"` + strings.Repeat("x", maxAuditLine) + `"}`
	log := `{"requestId":"a"}` + "\n" + long + "\n" + `{"requestId":"b"}` + "\n"
	var ids []string
	bad, err := readAudit(strings.NewReader(log), func(r AuditRecord) { ids = append(ids, r.RequestID) }, false)
	if err != nil || bad != 1 || strings.Join(ids, ",") != "a,b" {
		t.Fatalf("ids %v, bad %d, err %v", ids, bad, err)
	}
}

// The longest line permtui writes, a request of the largest size made of
// characters that escape to six bytes each, recorded with its facts and a
// whole-session grant of the same value, is under the cap: its decision is
// replayed after a restart, not judged again (decision 0282).
func TestTheLongestRecordPermtuiWritesIsReplayed(t *testing.T) {
	big := strings.Repeat("<", wire.MaxFileSize)
	rec := indexedRec("big")
	rec.MatchValues, rec.Value = []string{big}, &big
	rec.Facts = &AuditFacts{MatchValues: []string{big}}
	rec.Grants = []wire.Grant{{Surface: "bash", Pattern: big}}
	line, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) <= 4*6*wire.MaxFileSize {
		t.Fatalf("the record is only %d bytes", len(line))
	}
	dir := t.TempDir()
	if err := os.WriteFile(AuditPath(dir), append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newAuditLog(dir, func(Event) {})
	defer l.close()
	if got, ok, looked := l.recorded(keyOf("s", "big", "c", 1)); !ok || !looked || got.RequestID != "big" {
		t.Fatalf("recorded(big) = %v, %v; want the decision", ok, looked)
	}
}

// The timer that writes lines nobody waits for can fire while a commit is
// in progress, which took none of the lines appended since it began. They
// are written by a later firing, not left in memory until something else
// is appended (a delivered line lost in a crash long after it was due).
func TestLazyLinesAreWrittenWhenTheTimerFiresMidCommit(t *testing.T) {
	l := newAuditLog(t.TempDir(), func(Event) {})
	defer l.close()
	l.mu.Lock()
	l.leading = true // another caller's commit is in progress
	l.mu.Unlock()
	l.appendLazy(AuditDelivery{Kind: deliveryKind, RequestID: "late"})
	l.lazy.Stop() // and the timer fires now
	l.flush()
	l.mu.Lock()
	l.leading = false // the commit ends
	l.cond.Broadcast()
	l.mu.Unlock()
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		data, err := os.ReadFile(l.path)
		if err == nil && strings.Contains(string(data), `"requestId":"late"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivered line was never written after the timer fired mid-commit: %q %v", data, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A request's requesterSessionId is any string a child sends, a lone
// surrogate included (kept as JSON.parse keeps it, decision 0175), which
// the audit line writes as U+FFFD. Its recorded decision is still found
// after a restart, so a crash between the record and the response does not
// get the request judged, or a person asked, a second time.
func TestADecisionForAnOddRequesterIsFoundAfterARestart(t *testing.T) {
	dir := t.TempDir()
	req := &wire.Request{ID: "1791279012345-odd-1", RequesterSessionID: "child\xed\xa0\x80\xffx", CreatedAt: 1791279012345.5}
	rec := AuditRecord{RequestID: req.ID, ServedSession: rootID, RequesterSession: req.RequesterSessionID,
		CreatedAt: req.CreatedAt, State: wire.StateDenied}
	l := newAuditLog(dir, func(Event) {})
	if err := l.append(rec); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := l.recorded(keyOfRequest(rootID, req)); !ok {
		t.Error("the decision is not found by the process that recorded it")
	}
	l.close()
	restarted := newAuditLog(dir, func(Event) {})
	defer restarted.close()
	got, ok, looked := restarted.recorded(keyOfRequest(rootID, req))
	if !ok || !looked || got.RequestID != req.ID || got.State != wire.StateDenied {
		t.Fatalf("after a restart: found %v (looked %v), record %+v", ok, looked, got)
	}
}

// asLogged, which keys a request's decision, is what the audit line's
// encoder and decoder make of a string, byte for byte.
func TestAsLoggedIsWhatTheLogReadsBack(t *testing.T) {
	for _, s := range []string{"plain", "child\xed\xa0\x80\xffx", "\xc3", "\xe2\x82(", "\xf0\x9f\x98", "\xc0\x80", "\xf4\x90\x80\x80", "ok\xef\xbf\xbd\xed\xbf\xbf"} {
		line, err := json.Marshal(s)
		var back string
		if err == nil {
			err = json.Unmarshal(line, &back)
		}
		if err != nil || asLogged(s) != back {
			t.Errorf("%q: asLogged %q, the log reads back %q (%v)", s, asLogged(s), back, err)
		}
	}
}

// s19 F4: a "this subagent" approval records in the audit log what the
// child records on it (the scope's grants), as a whole-session approval
// records its grants; a record written before carries none and still
// reads.
func TestASubagentApprovalRecordsWhatTheChildRecords(t *testing.T) {
	h := startServer(t, options{})
	suggested := []wire.Grant{{Surface: "bash", Pattern: "npm test *"}, {Surface: "bash", Pattern: "*"}}
	h.send(intent("1791279012345-child-1", "impl", "bash", "npm test", suggested...))
	ask := h.queued("1791279012345-child-1")
	offered, _ := ask.Scopes.Find(ScopeSubagent)
	if err := h.s.Decide(Decision{Ask: ask.ID, Scope: ScopeSubagent}); err != nil {
		t.Fatal(err)
	}
	h.await("1791279012345-child-1")
	recs := h.auditFor("1791279012345-child-1")
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	line, _ := json.Marshal(recs[0])
	var rec AuditRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.ChildGrants, offered.Grants) || len(offered.Grants) != 2 || rec.Grants != nil {
		t.Errorf("recorded child grants %v and grants %v, want the offer %v and none", rec.ChildGrants, rec.Grants, offered.Grants)
	}

	old := `{"askId":7,"requestId":"1791279012345-old-1","servedSession":"` + rootID + `","state":"approved_for_session","approved":true,"createdAt":1791279012345,"decidedAt":1791279012399}` + "\n"
	var read []AuditRecord
	if bad, err := readAudit(strings.NewReader(old), func(r AuditRecord) { read = append(read, r) }, true); bad != 0 || err != nil || len(read) != 1 {
		t.Fatalf("an older record: bad %d, err %v, %d read", bad, err, len(read))
	}
	if read[0].ChildGrants != nil || read[0].State != wire.StateApprovedForSession {
		t.Errorf("an older record reads as %+v", read[0])
	}
}

// The audit log opens without following a symlink, and refuses a file that
// is no regular file or that others can read: decisions and rules are not
// appended to another file, nor kept where others read them. The serving
// log reports it degraded (answers wait) and a rule record is not written;
// what was there is left as it was.
func TestTheAuditLogRefusesALinkOrAFileOthersRead(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	states := map[string]func(path string) error{
		"symlink":   func(path string) error { return os.Symlink(victim, path) },
		"mode 0644": func(path string) error { return os.WriteFile(path, []byte("keep\n"), 0o644) },
	}
	for what, plant := range states {
		stateDir := t.TempDir()
		path := filepath.Join(stateDir, "audit.jsonl")
		if err := plant(path); err != nil {
			t.Fatal(err)
		}
		var problem string
		l := newAuditLog(stateDir, func(ev Event) {
			if d, ok := ev.(Degraded); ok && d.Area == AreaAudit {
				problem = d.Problem
			}
		})
		if err := l.append(AuditRecord{RequestID: "r", State: wire.StateDenied}); err == nil {
			t.Errorf("%s: a decision was recorded", what)
		}
		l.close()
		if !strings.Contains(problem, path) || !strings.Contains(problem, "answers wait") {
			t.Errorf("%s: degraded %q", what, problem)
		}
		if err := appendRuleRecord(stateDir, RuleRecord{Surface: "bash", Pattern: "ls", Action: "allow"}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: rule record: %v", what, err)
		}
		for _, p := range []string{victim, path} {
			if data, err := os.ReadFile(p); err != nil || string(data) != "keep\n" {
				t.Fatalf("%s: %s holds %q %v", what, p, data, err)
			}
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644 {
			t.Fatalf("%s: mode %v %v", what, info.Mode(), err)
		}
	}
}

// A line above maxAuditLine (one written by hand) is passed over by the
// replay index as by ReadAudit, never held whole, and the decisions after
// it are found: reading it whole took its size in memory at every open.
func TestTheReplayIndexPassesOverALineAboveTheCap(t *testing.T) {
	dir := t.TempDir()
	var log []byte
	for _, part := range []any{indexedRec("before"), strings.Repeat("x", 2*maxAuditLine), indexedRec("after")} {
		line, ok := part.(string)
		if !ok {
			data, err := json.Marshal(part)
			if err != nil {
				t.Fatal(err)
			}
			line = string(data)
		}
		log = append(append(log, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.jsonl"), log, 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l := newAuditLog(dir, func(Event) {})
	runtime.ReadMemStats(&after)
	defer l.close()
	// Growing the one line buffer to the cap allocates about twice the
	// cap over all; reading the line whole took 3 times its size (6 caps
	// here), and growing it by append's quarters about 5.8 caps.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*maxAuditLine {
		t.Errorf("opening the log took %d MiB for a %d MiB line", grew>>20, len(log)>>20)
	}
	for _, id := range []string{"before", "after"} {
		if got, ok, looked := l.recorded(keyOf("s", id, "c", 1)); !ok || !looked || got.RequestID != id {
			t.Errorf("recorded(%s) = %+v, %v, %v", id, got, ok, looked)
		}
	}
}
