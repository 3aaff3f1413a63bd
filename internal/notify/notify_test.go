package notify

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/status"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

const secretCommand = "curl https://secret.example/?k=hunter2"

// secrets must not leave the process with the default detail.
var secrets = []string{"hunter2", "secret", "curl", "/home/ann"}

func queued(id serve.AskID, agent string) serve.AskQueued {
	v := secretCommand
	return serve.AskQueued{Ask: serve.Ask{
		Arrived: inbox.Arrived{ID: id, Session: "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b", Path: "/home/ann/.pi/x.json", Request: &wire.Request{
			RequesterAgentName: agent, Value: &v,
			AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{secretCommand}, RequesterCwd: "/home/ann/secret", Principal: wire.Principal{AgentName: agent}},
		}},
		Verdict: resolve.Verdict{Action: resolve.Ask, Surface: "bash", Explanation: "no rule allows " + secretCommand},
	}}
}

// start runs Run on an unbuffered channel; stop closes it and waits.
func start(t *testing.T, o Options) (chan<- serve.Event, func()) {
	t.Helper()
	ch := make(chan serve.Event)
	done := make(chan struct{})
	go func() { defer close(done); Run(ch, o) }()
	return ch, func() {
		close(ch)
		<-done
	}
}

// logBuffer is a logger whose output a test can read.
func logBuffer() (*slog.Logger, *testkit.SyncBuffer) {
	var b testkit.SyncBuffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(testkit.WaitLimit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readAll(t *testing.T, dir string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []string
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	return out
}

// --notify-cmd gets each new ask as one JSON line on stdin, with its
// approve page's link and no command text, value or path by default; an
// answered ask runs nothing.
func TestNotifyCmdGetsEachNewAskAsJSON(t *testing.T) {
	dir := t.TempDir()
	link := func(id serve.AskID) string { return fmt.Sprintf("https://phone.example/a/%d", id) }
	events, stop := start(t, Options{Command: fmt.Sprintf(`cat > %s/"$$".json`, dir), Link: link})
	events <- queued(1, "builder")
	events <- queued(2, "scout")
	events <- serve.Decided{Ask: queued(1, "builder").Ask, Queued: true, Response: wire.Response{Approved: true}}
	stop()
	got := readAll(t, dir)
	if len(got) != 2 {
		t.Fatalf("%d runs, want 2: %q", len(got), got)
	}
	agents := map[string]bool{}
	for _, raw := range got {
		var l status.Line
		if err := json.Unmarshal([]byte(raw), &l); err != nil || l.Event != status.Blocked {
			t.Fatalf("stdin %q: %v", raw, err)
		}
		agents[l.Agent] = true
		if l.Link != link(l.Ask) {
			t.Errorf("ask %d: link %q", l.Ask, l.Link)
		}
		for _, s := range secrets {
			if strings.Contains(raw, s) {
				t.Errorf("%q on the command's stdin: %s", s, raw)
			}
		}
	}
	if !agents["builder"] || !agents["scout"] {
		t.Fatalf("agents %v", agents)
	}
}

// An ask still waiting after Expiring runs the command again, as expiring.
func TestNotifyCmdRemindsOfAnAskAboutToExpire(t *testing.T) {
	dir := t.TempDir()
	events, stop := start(t, Options{Command: fmt.Sprintf(`cat > %s/"$$".json`, dir), Expiring: time.Millisecond})
	events <- queued(1, "builder")
	waitFor(t, "expiring run", func() bool {
		for _, raw := range readAll(t, dir) {
			if strings.Contains(raw, `"event":"expiring"`) && strings.Contains(raw, `"ask":1`) {
				return true
			}
		}
		return false
	})
	stop()
}

// A command that hangs or fails never holds up the events: every event is
// taken while it runs, the hung one is killed at its timeout, and each
// outcome is logged.
func TestASlowOrFailingNotifyCmdNeverHoldsUpEvents(t *testing.T) {
	log, out := logBuffer()
	events, stop := start(t, Options{Command: "sleep 600", Parallel: 1, Burst: 100, Timeout: 100 * time.Millisecond, Logger: log})
	for i := range 50 {
		events <- queued(serve.AskID(i+1), "builder") // each is taken while the first run sleeps
	}
	stop()
	for _, want := range []string{"notify-cmd killed after its timeout", "notify-cmd busy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log has no %q:\n%s", want, out.String())
		}
	}
	log, out = logBuffer()
	events, stop = start(t, Options{Command: "exit 3", Logger: log})
	events <- queued(1, "builder")
	stop()
	if !strings.Contains(out.String(), "notify-cmd failed") || !strings.Contains(out.String(), "exit=3") {
		t.Errorf("failure not logged:\n%s", out.String())
	}
}

// What a command leaves running in the background is killed when it
// ends, not left behind with init as its parent.
func TestNotifyCmdTakesItsBackgroundChildrenWithIt(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	events, stop := start(t, Options{Command: fmt.Sprintf(`(sleep 600 & echo $! > %[1]s.tmp && mv %[1]s.tmp %[1]s)`, pidFile)})
	events <- queued(1, "builder")
	stop()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	waitFor(t, "the background sleep gone", func() bool { return !safefs.PIDRunning(pid) })
}

// permtui's own secrets stay out of the command's environment; the rest
// of it (PATH for one) is the person's and stays.
func TestNotifyCmdDoesNotInheritTheNtfyToken(t *testing.T) {
	t.Setenv(TokenEnv, "tk_hunter2")
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	events, stop := start(t, Options{Command: "env > " + envFile})
	events <- queued(1, "builder")
	stop()
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "tk_hunter2") || strings.Contains(string(data), TokenEnv) {
		t.Error("the command's environment has the ntfy token")
	}
	if !strings.Contains(string(data), "PATH=") {
		t.Error("the command's environment lost PATH")
	}
}

// runs reads the lines the command got: one run per file.
func runs(t *testing.T, dir string) []status.Line {
	t.Helper()
	var out []status.Line
	for _, raw := range readAll(t, dir) {
		var l status.Line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("stdin %q: %v", raw, err)
		}
		out = append(out, l)
	}
	return out
}

// asksIn counts the asks a set of runs told of: one per ask line, the count
// of a "more" line.
func asksIn(ls []status.Line) int {
	n := 0
	for _, l := range ls {
		if l.Event == status.More {
			n += l.More
		} else {
			n++
		}
	}
	return n
}

// The command has ntfy's rate: beyond Burst runs a Window, asks are counted
// into one "more" run when the window has room.
func TestNotifyCmdCoalescesAFloodOfAsks(t *testing.T) {
	dir := t.TempDir()
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	events, stop := start(t, Options{Command: fmt.Sprintf(`cat > %s/"$$".json`, dir), Burst: 2, Window: time.Hour, Now: now})
	for i := range 60 {
		events <- queued(serve.AskID(i+1), "builder")
	}
	events <- serve.Serving{} // taken only once the last ask was handled
	clock.Store(int64(time.Hour / time.Second))
	stop()
	got := runs(t, dir)
	if len(got) != 3 {
		t.Fatalf("%d runs, want 2 and a count: %+v", len(got), got)
	}
	var more []status.Line
	for _, l := range got {
		if l.Event == status.More {
			more = append(more, l)
		}
	}
	if len(more) != 1 || more[0].More != 58 || more[0].Waiting != 60 || more[0].Ask != 0 {
		t.Fatalf("count runs %+v", more)
	}
}

// Asks that find every slot busy are not lost: they are counted into the
// next "more" run once a slot is free.
func TestNotifyCmdCountsAsksWhileAllSlotsAreBusy(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(t.TempDir(), "go")
	cmd := fmt.Sprintf(`cat > %[1]s/"$$".tmp && mv %[1]s/"$$".tmp %[1]s/"$$".json; while [ ! -e %[2]s ]; do sleep 0.01; done`, dir, gate)
	events, stop := start(t, Options{Command: cmd, Parallel: 1, Burst: 1000, Window: time.Millisecond})
	for i := range 10 {
		events <- queued(serve.AskID(i+1), "builder")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all ten asks told", func() bool { return asksIn(runs(t, dir)) == 10 })
	stop()
	if got := runs(t, dir); asksIn(got) != 10 || len(got) != 2 {
		t.Fatalf("runs %+v, want the first ask and a count of 9", got)
	}
}

// ntfyServer speaks ntfy's JSON publish API: a POST of a message to the
// server's root.
type ntfyServer struct {
	*httptest.Server
	mu   sync.Mutex
	msgs []ntfyMessage
	raw  []string
}

func newNtfyServer(t *testing.T) *ntfyServer {
	s := &ntfyServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m ntfyMessage
		if r.Method != http.MethodPost || r.URL.Path != "/" || json.Unmarshal(body, &m) != nil {
			http.Error(w, "bad publish", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.msgs, s.raw = append(s.msgs, m), append(s.raw, string(body))
		s.mu.Unlock()
		fmt.Fprintf(w, `{"id":"x","event":"message","topic":%q}`, m.Topic)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *ntfyServer) messages() ([]ntfyMessage, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ntfyMessage(nil), s.msgs...), append([]string(nil), s.raw...)
}

// One ntfy message per ask, to the topic of the URL, with a button that
// opens the ask's approve page and no command text by default.
func TestNtfyPublishesOneMessagePerAsk(t *testing.T) {
	srv := newNtfyServer(t)
	link := func(id serve.AskID) string { return fmt.Sprintf("https://phone.example/a/%d", id) }
	events, stop := start(t, Options{Ntfy: srv.URL + "/permtui-alerts", Link: link})
	for i := range 3 {
		events <- queued(serve.AskID(i+1), "builder")
	}
	stop()
	msgs, raw := srv.messages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 3: %q", len(msgs), raw)
	}
	seen := map[string]bool{}
	for i, m := range msgs {
		if m.Topic != "permtui-alerts" || m.Title != "permtui: builder is waiting" || m.Priority != priorityHigh {
			t.Errorf("message %d: %+v", i, m)
		}
		if len(m.Actions) != 1 || m.Actions[0].Action != "view" || m.Click != m.Actions[0].URL {
			t.Errorf("message %d actions: %+v", i, m)
		}
		seen[m.Actions[0].URL] = true
		for _, s := range secrets {
			if strings.Contains(raw[i], s) {
				t.Errorf("%q sent to ntfy: %s", s, raw[i])
			}
		}
	}
	for i := range 3 {
		if u := link(serve.AskID(i + 1)); !seen[u] {
			t.Errorf("no message opens %s", u)
		}
	}
}

// A hostile agent name reaches the phone as stand-ins, clipped: no ESC,
// BEL, newline or bidi override in the title, and no 20 KB title.
func TestNtfyTitleIsSanitizedAndClipped(t *testing.T) {
	srv := newNtfyServer(t)
	events, stop := start(t, Options{Ntfy: srv.URL + "/t"})
	events <- queued(1, "\x1b]0;pwned\a\n\u202e"+strings.Repeat("x", 20000))
	stop()
	msgs, _ := srv.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	title := msgs[0].Title
	if strings.ContainsAny(title, "\x1b\a\n\u202e") || len(title) > 200 || !strings.HasPrefix(title, "permtui: ⚠␛]0;pwned␇␊") {
		t.Fatalf("title of %d bytes: %.120q", len(title), title)
	}
}

// A lookalike agent name is marked in the push as the console marks it
// (decision 0205): "іmplementer" with a Cyrillic і must not read as the
// real implementer on a lock screen (adversarial pass adv2, finding F9).
func TestNtfyMarksALookalikeAgentName(t *testing.T) {
	srv := newNtfyServer(t)
	events, stop := start(t, Options{Ntfy: srv.URL + "/t"})
	events <- queued(1, "\u0456mplementer")
	events <- queued(2, "builder ")
	events <- queued(3, "implementer")
	stop()
	msgs, _ := srv.messages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, want := range []string{"permtui: ⚠\u0456mplementer is waiting", "permtui: ⚠builder␠ is waiting", "permtui: implementer is waiting"} {
		if msgs[i].Title != want {
			t.Errorf("title %q, want %q", msgs[i].Title, want)
		}
	}
	if !strings.Contains(msgs[0].Message, "⟨U+0456⟩mplementer") || strings.Contains(msgs[2].Message, "ASCII") {
		t.Errorf("the body does not spell only the lookalike name: %q / %q", msgs[0].Message, msgs[2].Message)
	}
}

// Beyond Burst messages a Window, asks are counted into one message when
// the window has room again, not sent one by one.
func TestNtfyCoalescesAFloodOfAsks(t *testing.T) {
	srv := newNtfyServer(t)
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	events, stop := start(t, Options{Ntfy: srv.URL + "/t", Burst: 2, Window: time.Hour, Now: now})
	for i := range 6 {
		events <- queued(serve.AskID(i+1), "builder")
	}
	events <- serve.Serving{} // taken only once the sixth ask was handled
	clock.Store(int64(time.Hour / time.Second))
	stop()
	msgs, raw := srv.messages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 2 and a count: %q", len(msgs), raw)
	}
	if last := msgs[2]; last.Title != "permtui: 4 more asks" || !strings.Contains(last.Message, "6 waiting") {
		t.Fatalf("count message %+v", last)
	}
}

// Asks held over the rate go out as counts once the window has room, on
// the rate's own timer: every ask is in a message or a count.
func TestNtfySendsHeldAsksWhenTheWindowMoves(t *testing.T) {
	srv := newNtfyServer(t)
	events, stop := start(t, Options{Ntfy: srv.URL + "/t", Burst: 1, Window: 20 * time.Millisecond})
	defer stop()
	for i := range 5 {
		events <- queued(serve.AskID(i+1), "builder")
	}
	counted := regexp.MustCompile(`^permtui: (\d+) more asks$`)
	waitFor(t, "every ask in a message or a count", func() bool {
		msgs, _ := srv.messages()
		total := 0
		for _, m := range msgs {
			if c := counted.FindStringSubmatch(m.Title); c != nil {
				n, _ := strconv.Atoi(c[1])
				total += n
			} else {
				total++
			}
		}
		return total == 5
	})
}

// --ntfy carries the token and the approve links: clear text only to this
// machine.
func TestNtfyRefusesClearTextOffLoopback(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://ntfy.sh/t", true},
		{"http://127.0.0.1:8080/t", true},
		{"http://localhost/t", true},
		{"http://[::1]:80/t", true},
		{"http://ntfy.example/t", false},
		{"http://192.168.1.5/t", false},
		{"http://localhost.evil.example/t", false},
	} {
		err := Check(Options{Ntfy: c.url})
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), c.url) {
			t.Errorf("--ntfy %s: %v", c.url, err)
		}
	}
}
