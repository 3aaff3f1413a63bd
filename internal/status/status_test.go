package status

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// Strings of an ask that must not leave the process with default detail.
const (
	secretValue  = "curl https://secret.example/token?k=hunter2"
	secretCwd    = "/home/ann/secret-project"
	secretWhy    = "no rule allows curl https://secret.example"
	secretReason = "not the secret endpoint"
	secretPath   = "/home/ann/.pi/agent/sessions/x/requests/r1.json"
)

func ask(id serve.AskID, session, agent string) serve.Ask {
	v, msg := secretValue, "Allow "+secretValue+"?"
	return serve.Ask{
		Arrived: inbox.Arrived{ID: id, Session: session, Path: secretPath, Request: &wire.Request{
			ID: "r", RequesterAgentName: agent, Value: &v, Message: &msg,
			AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{secretValue}, RequesterCwd: secretCwd, Principal: wire.Principal{AgentName: agent}},
		}},
		Verdict: resolve.Verdict{Action: resolve.Ask, Surface: "bash", Explanation: secretWhy},
	}
}

// An ask is counted under the agent its facts name (the principal the
// policy was scoped to), the name the console shows, not under the
// requester name the child also sent.
func TestLinesNameTheAgentTheConsoleShows(t *testing.T) {
	a := ask(1, "s1", "scout")
	a.Request.RequesterAgentName = "builder"
	tr := NewTracker(Full)
	l, ok := tr.Apply(serve.AskQueued{Ask: a}, time.Unix(0, 0))
	if !ok || l.Agent != "scout" || l.ByAgent["scout"] != 1 || l.ByAgent["builder"] != 0 {
		t.Fatalf("line %+v (%v), want the ask counted under scout", l, ok)
	}
}

// feed runs Run over evs and returns what it wrote.
func feed(t *testing.T, o Options, evs ...serve.Event) string {
	t.Helper()
	ch := make(chan serve.Event, len(evs))
	for _, ev := range evs {
		ch <- ev
	}
	close(ch)
	var out bytes.Buffer
	o.Lines = &out
	Run(ch, o)
	return out.String()
}

func story() []serve.Event {
	a1, a2, a3 := ask(1, "s1", "builder"), ask(2, "s1", "builder"), ask(3, "s2", "scout")
	return []serve.Event{
		serve.Arrived{Ask: a1},
		serve.AskQueued{Ask: a1}, serve.AskQueued{Ask: a2}, serve.AskQueued{Ask: a3},
		serve.Decided{Ask: a1, Queued: true, Response: wire.Response{State: wire.StateDeniedWithReason, DenialReason: secretReason}},
		serve.Withdrawn{Withdrawn: inbox.Withdrawn{ID: 2, Session: "s1"}, Pending: true},
		serve.Decided{Ask: ask(4, "s1", "builder"), Auto: true, Response: wire.Response{Approved: true}},
		// A stalled subscriber's counts, by who decided.
		serve.Skipped{AutoApproved: 5, AutoDenied: 1, Approved: 2, Denied: 3, Expired: 2},
	}
}

// With the default detail no command text, value, path, working directory,
// explanation or reason leaves in the events; full detail carries them
// (so the check below can fail).
func TestDefaultDetailCarriesNoCommandValueOrPath(t *testing.T) {
	secrets := []string{"secret", "hunter2", "/home/ann"}
	counts := feed(t, Options{Detail: Counts}, story()...)
	for _, s := range secrets {
		if strings.Contains(counts, s) {
			t.Errorf("default detail let %q out:\n%s", s, counts)
		}
	}
	full := feed(t, Options{Detail: Full}, story()...)
	for _, s := range []string{"hunter2", secretCwd, "no rule allows", secretReason} {
		if !strings.Contains(full, s) {
			t.Errorf("full detail does not carry %q:\n%s", s, full)
		}
	}
}

// Each change is one line with the waiting counts per session and agent
// and the decisions by kind so far.
func TestLinesCountWaitingAsksAndDecisions(t *testing.T) {
	out := feed(t, Options{Detail: Counts, Now: func() time.Time { return time.Unix(0, 0) }}, story()...)
	lines := parseLines(t, out)
	want := []struct {
		event, outcome string
		waiting        int
		builder        int
	}{
		{Blocked, "", 1, 1}, {Blocked, "", 2, 2}, {Blocked, "", 3, 2},
		{Unblocked, Denied, 2, 1}, {Unblocked, Expired, 1, 0}, {Answered, AutoApproved, 1, 0}, {Counted, "", 1, 0},
		{Stopped, "", 1, 0},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		l := lines[i]
		if l.Event != w.event || l.Outcome != w.outcome || l.Waiting != w.waiting || l.ByAgent["builder"] != w.builder {
			t.Errorf("line %d: %+v, want %+v", i, l, w)
		}
	}
	if l := lines[2]; l.BySession["s1"] != 2 || l.BySession["s2"] != 1 || l.ByAgent["scout"] != 1 || l.Agent != "scout" || l.Surface != "bash" {
		t.Errorf("third ask's line: %+v", l)
	}
	last := lines[len(lines)-1].Decisions
	if last[Denied] != 4 || last[Expired] != 3 || last[AutoApproved] != 6 || last[AutoDenied] != 1 || last[Approved] != 2 {
		t.Errorf("decisions by kind: %v", last)
	}
}

// A denial no person made (decidedBy unavailable: a relay that could not
// use the hub's decision, a front end with nobody attached) is counted as
// its own outcome, not as a person's denial.
func TestADenialNobodyMadeIsNotAPersonsDenial(t *testing.T) {
	a := ask(1, "s1", "builder")
	unread := wire.Response{State: wire.StateDeniedWithReason, DenialReason: "unreadable", DecidedBy: wire.UnavailableDecision("unreadable")}
	out := feed(t, Options{Detail: Counts}, serve.AskQueued{Ask: a}, serve.Decided{Ask: a, Queued: true, Response: unread},
		serve.Decided{Ask: ask(2, "s1", "builder"), Response: wire.Response{State: wire.StateDenied, DecidedBy: wire.UserDecision()}})
	lines := parseLines(t, out)
	if len(lines) != 4 || lines[3].Event != Stopped || lines[1].Outcome != Unavailable || lines[2].Outcome != Denied {
		t.Fatalf("lines %+v", lines)
	}
	if d := lines[2].Decisions; d[Unavailable] != 1 || d[Denied] != 1 {
		t.Fatalf("decisions by kind: %v", d)
	}
}

// parseLines reads the JSON lines Run wrote.
func parseLines(t *testing.T, out string) []Line {
	t.Helper()
	var lines []Line
	for _, raw := range strings.Split(strings.TrimSpace(out), "\n") {
		var l Line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// running is Run going on, as while permtui serves: send events on it,
// and stop it as serving stops.
type running struct {
	events chan serve.Event
	done   chan struct{}
}

func runStatus(o Options) *running {
	r := &running{events: make(chan serve.Event), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		Run(r.events, o)
	}()
	return r
}

func (r *running) send(evs ...serve.Event) {
	for _, ev := range evs {
		r.events <- ev
	}
}

func (r *running) stop() {
	close(r.events)
	<-r.done
}

// waitFile waits until the file at path holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		data, err := os.ReadFile(path)
		if err == nil && string(data) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status file %q (%v), want %q", data, err, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// The status file holds the summary, rewritten as asks come and go, 0600;
// an agent name cannot put a status-bar format or an escape in it.
func TestStatusFileKeepsTheSummary(t *testing.T) {
	file := filepath.Join(t.TempDir(), "status")
	r := runStatus(Options{File: file})
	defer r.stop()
	waitFile(t, file, "\n") // nothing waits yet
	r.send(serve.AskQueued{Ask: ask(1, "s1", "builder")}, serve.AskQueued{Ask: ask(2, "s1", "scout")},
		serve.AskQueued{Ask: ask(3, "s2", "builder")})
	waitFile(t, file, "⏸ 3 waiting · builder 2 · scout 1\n")
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("status file mode: %v %v", info, err)
	}
	r.send(serve.AskQueued{Ask: ask(4, "s1", "#[fg=red]\x1b]0;x\a")}, serve.AskQueued{Ask: ask(5, "s1", "zed")})
	waitFile(t, file, "⏸ 5 waiting · builder 2 · ??fg?red???0?x? 1 · scout 1 · +1\n")
	for id := range serve.AskID(5) {
		r.send(serve.Withdrawn{Withdrawn: inbox.Withdrawn{ID: id + 1}, Pending: true})
	}
	waitFile(t, file, "\n")
}

// When serving stops (a quit, SIGTERM, a fatal error: the subscription
// ends) the status file says so, where it kept its last summary and a
// status bar went on showing asks waiting, or nothing waiting, from a
// permtui that no longer serves; the events end with a stopped line.
func TestTheStatusFileSaysServingStopped(t *testing.T) {
	file := filepath.Join(t.TempDir(), "status")
	var lines bytes.Buffer
	r := runStatus(Options{File: file, Lines: &lines})
	r.send(serve.AskQueued{Ask: ask(1, "s1", "builder")})
	waitFile(t, file, "⏸ 1 waiting · builder 1\n")
	r.stop()
	if got := read(t, file); got != StoppedSummary+"\n" {
		t.Fatalf("status file after serving stopped %q, want %q", got, StoppedSummary+"\n")
	}
	var last Line
	out := strings.Split(strings.TrimSpace(lines.String()), "\n")
	if err := json.Unmarshal([]byte(out[len(out)-1]), &last); err != nil || last.Event != Stopped || last.Waiting != 1 {
		t.Fatalf("last events line %q (%v), want a stopped line with the count", out[len(out)-1], err)
	}
}

// While permtui serves, the status file is rewritten every Heartbeat even
// when nothing changed, so a reader tells a line left by a permtui that
// was killed (no chance to say it stopped) by the file's age.
func TestTheStatusFileIsRewrittenWhileServing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "status")
	r := runStatus(Options{File: file, Heartbeat: time.Millisecond})
	defer r.stop()
	waitFile(t, file, "\n")
	first, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		// Each write renames a new file into place.
		if now, err := os.Stat(file); err == nil && !os.SameFile(first, now) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the status file was not rewritten while nothing changed")
		}
		time.Sleep(time.Millisecond)
	}
	if got := read(t, file); got != "\n" {
		t.Fatalf("status file rewritten as %q", got)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// unsafe reports a rune a reader of a line must not get as it is.
func unsafe(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || termsafe.Hidden(r) })
}

// A child's strings leave sanitized and clipped: an agent name with ESC,
// BEL, a newline and a bidi override, 20,000 characters long, makes a
// short line whose decoded fields a script can print, and so do a session
// and, with full detail, the value and working directory.
func TestChildStringsLeaveSanitizedAndClipped(t *testing.T) {
	hostile := "\x1b]0;pwned\a\n\u202e" + strings.Repeat("x", 20000)
	a := ask(1, hostile, hostile)
	a.Request.Value, a.Request.AccessIntent.RequesterCwd = &hostile, hostile
	a.Verdict.Explanation = hostile
	for _, d := range []Detail{Counts, Full} {
		out := feed(t, Options{Detail: d}, serve.AskQueued{Ask: a},
			serve.Decided{Ask: a, Queued: true, Response: wire.Response{State: wire.StateDeniedWithReason, DenialReason: hostile}})
		for raw := range strings.Lines(out) {
			if len(raw) > 8000 {
				t.Fatalf("detail %s: a %d-byte line", d, len(raw))
			}
			var l Line
			if err := json.Unmarshal([]byte(raw), &l); err != nil {
				t.Fatalf("%q: %v", raw, err)
			}
			fields := []string{l.Agent, l.Session, l.Cwd, l.Why, l.Reason}
			if l.Value != nil {
				fields = append(fields, *l.Value)
			}
			for k := range l.ByAgent {
				fields = append(fields, k)
			}
			for k := range l.BySession {
				fields = append(fields, k)
			}
			for _, f := range fields {
				if unsafe(f) || len(f) > 1100 {
					t.Errorf("detail %s: field of %d bytes, unsafe %v: %.80q", d, len(f), unsafe(f), f)
				}
			}
			if l.Event != Stopped && !strings.HasPrefix(l.Agent, "␛]0;pwned␇␊⟨U+202E⟩") || len(l.Agent) > 120 {
				t.Errorf("agent %q", l.Agent)
			}
		}
	}
}

// A status file that cannot be written is logged once, not at every change
// and heartbeat, and once more when it is written again.
func TestAFailingStatusFileIsLoggedOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	file := filepath.Join(dir, "status")
	var logs testkit.SyncBuffer
	r := runStatus(Options{File: file, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r.send(serve.AskQueued{Ask: ask(1, "s1", "builder")}, serve.AskQueued{Ask: ask(2, "s1", "builder")},
		serve.AskQueued{Ask: ask(3, "s1", "builder")})
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r.send(serve.AskQueued{Ask: ask(4, "s1", "builder")})
	waitFile(t, file, "⏸ 4 waiting · builder 4\n")
	r.stop()
	if n := strings.Count(logs.String(), "status file not written"); n != 1 {
		t.Errorf("%d failures logged, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "status file written again") {
		t.Errorf("the recovery is not logged:\n%s", logs.String())
	}
}
