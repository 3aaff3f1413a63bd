package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/headless"
	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

func TestHubFlagMistakes(t *testing.T) {
	for _, args := range [][]string{
		{"relay"},
		{"relay", "--hub", "nats://127.0.0.1:1"},
		{"serve", "--headless", "--hub", "nats://127.0.0.1:1"},
		{"hub", "--tls-cert", "c.pem"},
	} {
		if code, _, errOut := runCmd(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	code, _, errOut := runCmd(t, "", "hub", "--listen", "0.0.0.0:0", "--state-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "without TLS") {
		t.Errorf("hub beyond loopback: exit %d %q", code, errOut)
	}
}

// TestUsageMistakesAreNamedTogether: every usage mistake of a command line
// is reported at once, each named, with the pointer to the command's help.
func TestUsageMistakesAreNamedTogether(t *testing.T) {
	code, out, errOut := runCmd(t, "", "serve", "--headless", "--ask", "maybe", "--hub", "nats://127.0.0.1:1", "--detail", "most", "stray")
	for _, want := range []string{`unexpected argument "stray"`, "--ask must be deny or leave", "--hub and --creds go together", "--detail must be counts or full", "Run 'permtui serve --help'"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %q", want, errOut)
		}
	}
	if code != 2 || out != "" {
		t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
	}
	// One mistake of the hub's subcommands also points to their help.
	if _, _, errOut := runCmd(t, "", "hub", "users"); !strings.Contains(errOut, "Run 'permtui hub users --help'") {
		t.Errorf("hub users: %q", errOut)
	}
}

// startTestHub starts an embedded hub for relay alpha and the approvers
// under a fresh root, with the relay's agent dir made.
func startTestHub(t *testing.T, approvers ...string) (h *hub.Hub, root, agentDir string) {
	t.Helper()
	root = t.TempDir()
	h, err := hub.Start(hub.Config{
		Listen: "127.0.0.1:0", StoreDir: filepath.Join(root, "hub", "store"), CredsDir: filepath.Join(root, "hub", "creds"),
		Relays: []string{"alpha"}, Approvers: approvers,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Shutdown)
	agentDir = filepath.Join(root, "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return h, root, agentDir
}

// TestRelayAndHeadlessApproverOverAHub runs 'permtui relay' and 'permtui
// serve --headless --hub --events FILE' against an embedded hub: the child's
// ask crosses the hub, is denied by the headless approver, the relay's audit
// record names that approver, and the approver's events file saw the agent
// blocked and unblocked.
func TestRelayAndHeadlessApproverOverAHub(t *testing.T) {
	h, root, agentDir := startTestHub(t, "ann")
	relayState := filepath.Join(root, "relay-state")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relayOut, approverOut := &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
	done := make(chan int, 2)
	go func() {
		done <- run(ctx, []string{"relay", "--hub", h.URL(), "--creds", h.CredsFile(hub.RoleRelay, "alpha"),
			"--agent-dir", agentDir, "--project", root, "--state-dir", relayState, "--session", rootID},
			strings.NewReader(""), relayOut, &testkit.SyncBuffer{})
	}()
	go func() {
		done <- run(ctx, []string{"serve", "--headless", "--ask", "deny", "--hub", h.URL(), "--creds", h.CredsFile(hub.RoleApprover, "ann"),
			"--state-dir", filepath.Join(root, "ann-state"), "--events", filepath.Join(root, "events.jsonl")},
			strings.NewReader(""), approverOut, &testkit.SyncBuffer{})
	}()

	child := pichild.Child{Layout: wire.NewLayout(agentDir), Target: rootID, Poll: 20 * time.Millisecond, Timeout: time.Minute}
	res, err := child.Ask(ctx, pichild.NewestBash(rootID, "builder", "c1", root, "make deploy"))
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Response; res.Outcome != pichild.Answered || r.Approved || r.DenialReason != headless.HubDenyReason {
		t.Fatalf("%s %+v", res.Outcome, r)
	}
	// The approver hears the relay's answer after the child does.
	eventsFile := filepath.Join(root, "events.jsonl")
	for deadline := time.Now().Add(testkit.WaitLimit); ; time.Sleep(20 * time.Millisecond) {
		if data, _ := os.ReadFile(eventsFile); strings.Contains(string(data), `"event":"unblocked"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub approver's events file never said the agent was unblocked")
		}
	}
	cancel()
	for range 2 {
		if code := <-done; code != 0 {
			t.Fatalf("exit %d\nrelay: %s\napprover: %s", code, relayOut, approverOut)
		}
	}
	audit, err := os.ReadFile(filepath.Join(relayState, "audit.jsonl"))
	if err != nil || !strings.Contains(string(audit), `"approver":"ann"`) {
		t.Fatalf("relay audit %q %v", audit, err)
	}
	if !strings.Contains(approverOut.String(), `"host":"alpha"`) {
		t.Fatalf("approver lines lack the host: %s", approverOut)
	}
	events, err := os.ReadFile(eventsFile)
	if err != nil || !strings.Contains(string(events), `"event":"blocked"`) || strings.Contains(string(events), "make deploy") {
		t.Fatalf("the hub approver's events: %s %v", events, err)
	}
}

// A headless approver at a hub leaves the asks by default: a person's
// console may be attached too, and the first decision made at the hub is
// the ask's only one, so a default deny would win every race against the
// person, saying no approver was attached (adversarial finding F15).
func TestAHeadlessApproverAtAHubLeavesAsksByDefault(t *testing.T) {
	h, root, agentDir := startTestHub(t, "ann", "bob")
	relayState := filepath.Join(root, "relay-state")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 3)
	go func() {
		done <- run(ctx, []string{"relay", "--hub", h.URL(), "--creds", h.CredsFile(hub.RoleRelay, "alpha"),
			"--agent-dir", agentDir, "--project", root, "--state-dir", relayState, "--session", rootID},
			strings.NewReader(""), &testkit.SyncBuffer{}, &testkit.SyncBuffer{})
	}()
	approver := func(ctx context.Context, name string, out *testkit.SyncBuffer, flags ...string) {
		args := append([]string{"serve", "--headless", "--hub", h.URL(), "--creds", h.CredsFile(hub.RoleApprover, name),
			"--state-dir", filepath.Join(root, name+"-state")}, flags...)
		done <- run(ctx, args, strings.NewReader(""), out, &testkit.SyncBuffer{})
	}
	annCtx, stopAnn := context.WithCancel(ctx)
	annOut := &testkit.SyncBuffer{}
	go approver(annCtx, "ann", annOut)
	child := pichild.Child{Layout: wire.NewLayout(agentDir), Target: rootID, Poll: 20 * time.Millisecond, Timeout: time.Minute}
	req := pichild.NewestBash(rootID, "builder", "c1", root, "make release")
	answered := make(chan pichild.Result, 1)
	go func() {
		res, _ := child.Ask(ctx, req)
		answered <- res
	}()
	waitUntil(t, testkit.WaitLimit, "ann printed the ask", func() bool {
		return strings.Contains(annOut.String(), `"event":"queued"`) && strings.Contains(annOut.String(), req.ID)
	})
	stopAnn()
	if code := <-done; code != 0 {
		t.Fatalf("ann exit %d", code)
	}
	go approver(ctx, "bob", &testkit.SyncBuffer{}, "--ask", "deny")
	if res := <-answered; res.Outcome != pichild.Answered || res.Response.Approved {
		t.Fatalf("%+v", res)
	}
	cancel()
	for range 2 {
		if code := <-done; code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
	audit, err := os.ReadFile(filepath.Join(relayState, "audit.jsonl"))
	if err != nil || !strings.Contains(string(audit), `"approver":"bob"`) || strings.Contains(string(audit), `"approver":"ann"`) {
		t.Fatalf("the ask was not left by ann's default and denied by bob's --ask=deny: %s %v", audit, err)
	}
}

// A headless approver that attaches to a hub holding an ask already
// answered prints only the asks still open: the answered one was printed
// as queued and then decided by every approver that attached later, read
// again from the asks stream. Its --notify-cmd announces only the open
// ask, once (finding F9: every answered ask was announced blocked, and the
// open one folded into "N more").
func TestAHeadlessApproverAttachingLaterPrintsOnlyOpenAsks(t *testing.T) {
	h, root, agentDir := startTestHub(t, "ann", "bob")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relayOut := &testkit.SyncBuffer{}
	done := make(chan int, 3)
	go func() {
		done <- run(ctx, []string{"relay", "--hub", h.URL(), "--creds", h.CredsFile(hub.RoleRelay, "alpha"),
			"--agent-dir", agentDir, "--project", root, "--state-dir", filepath.Join(root, "relay-state"), "--session", rootID},
			strings.NewReader(""), relayOut, &testkit.SyncBuffer{})
	}()
	approver := func(ctx context.Context, name, ask string, out *testkit.SyncBuffer, extra ...string) {
		done <- run(ctx, append([]string{"serve", "--headless", "--ask", ask, "--hub", h.URL(), "--creds", h.CredsFile(hub.RoleApprover, name),
			"--state-dir", filepath.Join(root, name+"-state")}, extra...), strings.NewReader(""), out, &testkit.SyncBuffer{})
	}
	annCtx, stopAnn := context.WithCancel(ctx)
	go approver(annCtx, "ann", "deny", &testkit.SyncBuffer{})
	child := pichild.Child{Layout: wire.NewLayout(agentDir), Target: rootID, Poll: 20 * time.Millisecond, Timeout: time.Minute}
	answeredReq := pichild.NewestBash(rootID, "builder", "c1", root, "make deploy")
	if res, err := child.Ask(ctx, answeredReq); err != nil || res.Outcome != pichild.Answered || res.Response.Approved {
		t.Fatalf("%+v %v", res, err)
	}
	stopAnn()
	if code := <-done; code != 0 {
		t.Fatalf("ann exit %d", code)
	}
	openReq := pichild.NewestBash(rootID, "builder", "c1", root, "npm publish")
	go func() { _, _ = child.Ask(ctx, openReq) }()
	waitUntil(t, testkit.WaitLimit, "the relay queued the open ask", func() bool {
		return strings.Contains(relayOut.String(), `"event":"queued"`) && strings.Contains(relayOut.String(), openReq.ID)
	})
	bobOut, notified := &testkit.SyncBuffer{}, filepath.Join(root, "notified")
	if err := os.Mkdir(notified, 0o700); err != nil {
		t.Fatal(err)
	}
	go approver(ctx, "bob", "leave", bobOut, "--detail", "full", "--notify-cmd", `cat > "`+notified+`/$$.json"`)
	waitUntil(t, testkit.WaitLimit, "bob printed the open ask", func() bool { return strings.Contains(bobOut.String(), openReq.ID) })
	notes := func() (out []string) {
		runs, _ := filepath.Glob(filepath.Join(notified, "*.json"))
		for _, f := range runs {
			data, _ := os.ReadFile(f)
			out = append(out, string(data))
		}
		return out
	}
	waitUntil(t, testkit.WaitLimit, "bob's --notify-cmd announced the open ask", func() bool {
		return strings.Contains(strings.Join(notes(), ""), "npm publish")
	})
	cancel()
	for range 2 {
		if code := <-done; code != 0 {
			t.Fatalf("exit %d\nrelay: %s\nbob: %s", code, relayOut, bobOut)
		}
	}
	if strings.Contains(bobOut.String(), answeredReq.ID) {
		t.Fatalf("bob printed the ask answered before it attached:\n%s", bobOut)
	}
	if got := notes(); len(got) != 1 || !strings.Contains(got[0], `"event":"blocked"`) || !strings.Contains(got[0], `"waiting":1`) {
		t.Fatalf("bob's --notify-cmd got %q", got)
	}
}
