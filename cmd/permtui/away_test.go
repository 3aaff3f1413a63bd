package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/pichild"
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
	for _, want := range []string{`"event":"blocked"`, `"agent":"builder"`, `"event":"unblocked"`, `"outcome":"expired"`} {
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
		{"--hub=nats://127.0.0.1:4222 --creds=x.creds --status-file=s", "not available with --hub yet"},
	} {
		code, _, errOut := runCmd(t, "", append([]string{"serve", "--headless"}, strings.Fields(c.args)...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, %q", c.args, code, errOut)
		}
	}
}
