package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/status"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// waitForFile waits until path holds want.
func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		data, _ := os.ReadFile(path)
		if string(data) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want %q", path, data, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve --events, --status-file, --notify-cmd and --ntfy: the status file
// says who waits while an ask waits and is empty once the child gave up;
// the events file has the blocked and unblocked lines, the command ran and
// ntfy got a message for the ask, and with the default detail none of them
// has the command, its value or the working directory.
func TestServeWritesEventsAndStatusForAwayFromTheKeyboard(t *testing.T) {
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	t.Setenv("PI_CODING_AGENT_DIR", agentDir)
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"*":"ask"}}`))
	eventsFile, statusFile := filepath.Join(root, "events.jsonl"), filepath.Join(root, "status")
	notified := filepath.Join(root, "notified")
	if err := os.Mkdir(notified, 0o700); err != nil {
		t.Fatal(err)
	}
	var posts testkit.SyncBuffer
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		posts.Write(append(body, '\n'))
	}))
	defer ntfy.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	stderr := &testkit.SyncBuffer{}
	go func() {
		done <- run(ctx, []string{"serve", "--headless", "--ask=leave", "--project", root, "--state-dir", filepath.Join(root, "state"),
			"--session", rootID, "--events", eventsFile, "--status-file", statusFile,
			"--notify-cmd", `cat > "` + notified + `/$$.json"`, "--ntfy", ntfy.URL + "/alerts"}, strings.NewReader(""), &testkit.SyncBuffer{}, stderr)
	}()
	const command, cwd = "curl https://secret.example/?k=hunter2", "/home/ann/secret-project"
	child := pichild.Child{Layout: wire.NewLayout(agentDir), Target: rootID, Liveness: true}
	childCtx, giveUp := context.WithCancel(context.Background())
	asked := make(chan error, 1)
	go func() {
		_, err := child.Ask(childCtx, pichild.NewestBash(rootID, "builder", "0198c3b0-1111-7222-8333-944455556666", cwd, command))
		asked <- err
	}()
	waitForFile(t, statusFile, "⏸ 1 waiting · builder 1\n")
	giveUp() // the child withdraws its request
	<-asked
	waitForFile(t, statusFile, "\n")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got, err := os.ReadFile(statusFile); err != nil || string(got) != status.StoppedSummary+"\n" {
		t.Errorf("status file once serving stopped: %q %v", got, err)
	}
	data, err := os.ReadFile(eventsFile)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(eventsFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("events file: %v %v", info, err)
	}
	events := string(data)
	runs, _ := filepath.Glob(filepath.Join(notified, "*.json"))
	if len(runs) != 1 {
		t.Fatalf("--notify-cmd ran %d times, want once", len(runs))
	}
	stdin, _ := os.ReadFile(runs[0])
	if !strings.Contains(posts.String(), `"title":"permtui: builder is waiting"`) {
		t.Errorf("ntfy got %q", posts.String())
	}
	for _, want := range []string{`"event":"blocked"`, `"agent":"builder"`, `"event":"unblocked"`, `"outcome":"expired"`, `"event":"stopped"`} {
		if !strings.Contains(events, want) {
			t.Errorf("no %s in\n%s", want, events)
		}
	}
	for _, out := range []string{events, string(stdin), posts.String()} {
		for _, secret := range []string{"hunter2", "secret", "curl", "/home/ann"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q left with the default detail:\n%s", secret, out)
			}
		}
	}
}

// The away flags are checked before serving starts.
func TestAwayFlagsAreCheckedFirst(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--detail=most", "--detail must be counts or full"},
		{"--ntfy=ntfy.sh", "--ntfy wants a topic URL"},
		{"--ntfy=https://ntfy.sh/", "--ntfy wants a topic URL"},
		{"--ntfy=http://ntfy.example/t", "plain http off this machine"},
	} {
		code, _, errOut := runCmd(t, "", append([]string{"serve", "--headless"}, strings.Fields(c.args)...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, %q", c.args, code, errOut)
		}
	}
}

// approveFixture is 'permtui serve --headless --ask=leave --web' with a
// child waiting on one ask, and the ask's link as --notify-cmd got it.
type approveFixture struct {
	link, state string
	asked       chan pichild.Result
	stop        func()
	ntfy        *testkit.SyncBuffer // the bodies --ntfy posted, one a line
}

func startApproveFixture(t *testing.T, command string) *approveFixture {
	t.Helper()
	root := t.TempDir()
	agentDir := filepath.Join(root, "agent")
	t.Setenv("PI_CODING_AGENT_DIR", agentDir)
	testkit.WriteFile(t, filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json"), []byte(`{"permission":{"*":"ask"}}`))
	notified := filepath.Join(root, "notified")
	if err := os.Mkdir(notified, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &approveFixture{state: filepath.Join(root, "state"), asked: make(chan pichild.Result, 1), ntfy: &testkit.SyncBuffer{}}
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.ntfy.Write(append(body, '\n'))
	}))
	t.Cleanup(ntfy.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	stderr := &testkit.SyncBuffer{}
	go func() {
		done <- run(ctx, []string{"serve", "--headless", "--ask=leave", "--project", root, "--state-dir", f.state, "--session", rootID,
			"--web", "127.0.0.1:0", "--notify-cmd", `cat > "` + notified + `/$$.json"`, "--ntfy", ntfy.URL + "/alerts"}, strings.NewReader(""), &testkit.SyncBuffer{}, stderr)
	}()
	stopped := false
	f.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	}
	t.Cleanup(f.stop)
	child := pichild.Child{Layout: wire.NewLayout(agentDir), Target: rootID, Liveness: true}
	go func() {
		res, _ := child.Ask(context.Background(), pichild.NewestBash(rootID, "builder", "0198c3b0-1111-7222-8333-944455556666", "/w", command))
		f.asked <- res
	}()
	var note struct{ Link string }
	deadline := time.Now().Add(testkit.WaitLimit)
	for note.Link == "" {
		if runs, _ := filepath.Glob(filepath.Join(notified, "*.json")); len(runs) > 0 {
			data, _ := os.ReadFile(runs[0])
			_ = json.Unmarshal(data, &note)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no link notified: %s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.link = note.Link
	return f
}

// approved checks that the child was answered approved and, once permtui
// stopped, that the audit names the approve page.
func (f *approveFixture) approved(t *testing.T) {
	t.Helper()
	if res := <-f.asked; res.Outcome != pichild.Answered || !res.Response.Approved || res.Response.State != wire.StateApproved {
		t.Fatalf("child: %+v", res)
	}
	f.stop()
	audit, err := os.ReadFile(filepath.Join(f.state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"approver":"web:[0-9a-f]{12}"`).Match(audit) {
		t.Fatalf("audit does not name the page:\n%s", audit)
	}
}

// The approve page end to end: the link comes on --notify-cmd's stdin and
// as ntfy's Review button, the page shows the ask, Approve once answers the
// child approved, the audit names the page's link, and the same link is
// refused afterwards.
func TestApprovePageAnswersTheChild(t *testing.T) {
	f := startApproveFixture(t, "make <b>deploy</b>")
	review := `"actions":[{"action":"view","label":"Review","url":"` + f.link + `"}]`
	deadline := time.Now().Add(testkit.WaitLimit)
	for !strings.Contains(f.ntfy.String(), review) {
		if time.Now().After(deadline) {
			t.Fatalf("ntfy got no Review button for %s: %s", f.link, f.ntfy.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get(f.link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "make &lt;b&gt;deploy&lt;/b&gt;") {
		t.Fatalf("page %d:\n%s", resp.StatusCode, body)
	}
	form := url.Values{"decision": {"approve"}}
	for _, m := range regexp.MustCompile(`name="(form|shown)" value="([^"]*)"`).FindAllStringSubmatch(string(body), 2) {
		form.Set(m[1], m[2])
	}
	post := func() int {
		u, _ := url.Parse(f.link)
		req, _ := http.NewRequest(http.MethodPost, f.link, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", u.Scheme+"://"+u.Host)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if code := post(); code != http.StatusGone {
		t.Fatalf("second use: %d", code)
	}
	f.approved(t)
}

// The approve page is refused on the network in clear text unless a proxy
// is said to terminate TLS.
func TestWebFlagsRefuseClearTextOnTheNetwork(t *testing.T) {
	for _, c := range []struct {
		f    webFlags
		want string
	}{
		{webFlags{addr: "127.0.0.1:8765"}, ""},
		{webFlags{addr: "[::1]:8765"}, ""},
		{webFlags{addr: "localhost:8765"}, ""},
		{webFlags{addr: "192.168.1.5:8765"}, "reachable from the network"},
		{webFlags{addr: "0.0.0.0:8765", cert: "c", key: "k"}, "listens on every address"},
		{webFlags{addr: ":8765", behindProxy: true, url: "https://box.ts.net"}, ""},
		{webFlags{addr: "100.64.0.1:8765", behindProxy: true}, "needs the https address"},
		{webFlags{addr: "100.64.0.1:8765", behindProxy: true, url: "http://box"}, "needs the https address"},
		{webFlags{addr: "100.64.0.1:8765", cert: "c"}, "go together"},
		{webFlags{addr: "100.64.0.1:8765", cert: "c", key: "k"}, ""},
		{webFlags{url: "https://box"}, "need --web ADDR"},
		{webFlags{addr: "127.0.0.1:8765", url: "https://box/approve"}, "nothing after"},
	} {
		err := c.f.check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
}

// endedSource is a serving loop that has ended: its subscriptions are closed.
type endedSource struct{}

func (endedSource) Subscribe() (<-chan serve.Event, func()) {
	ch := make(chan serve.Event)
	close(ch)
	return ch, func() {}
}

func (endedSource) Decide(serve.Decision) error { return nil }

// --events opens without following a symlink and creates its file 0600; a
// file that is no regular file or that others can read is refused, named,
// and left as it was.
func TestEventsFileRefusesALinkOrAFileOthersRead(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	for _, bad := range []string{link, victim, fifo, dir} {
		if _, err := startAway(endedSource{}, awayFlags{events: bad}, logger); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("--events %s: %v", bad, err)
		}
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "keep\n" {
		t.Fatalf("victim %q %v", data, err)
	}
	fresh := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(filepath.Join(dir, "old.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{fresh, filepath.Join(dir, "old.jsonl")} {
		wait, err := startAway(endedSource{}, awayFlags{events: ok}, logger)
		if err != nil {
			t.Fatalf("--events %s: %v", ok, err)
		}
		wait()
		if info, err := os.Stat(ok); err != nil || info.Mode() != 0o600 {
			t.Fatalf("%s: %v %v", ok, info.Mode(), err)
		}
	}
}

// --web alone is a usage mistake: the page's single-use links reach a person
// only through --ntfy or --notify-cmd, so without one it listened with no
// way to reach an ask on it (adversarial pass, decision 0239).
func TestWebWithoutANotifierIsAUsageMistake(t *testing.T) {
	root := t.TempDir()
	args := []string{"serve", "--headless", "--agent-dir", root, "--state-dir", filepath.Join(root, "s"), "--web", "127.0.0.1:0"}
	code, out, errOut := runCmd(t, "", args...)
	if code != 2 || !strings.Contains(errOut, "--web needs --ntfy or --notify-cmd") || out != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q; want 2 and the reason", code, errOut, out)
	}
}
