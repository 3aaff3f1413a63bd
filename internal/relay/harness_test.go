package relay

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/headless"
	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

const rootID = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"

// testHub is an embedded hub on a random loopback port with its storage in
// the test's temporary directory; restart keeps the port and the storage.
type testHub struct {
	t   testing.TB
	cfg hub.Config
	h   *hub.Hub
}

func startHub(t testing.TB) *testHub {
	t.Helper()
	return startHubWith(t, func(*hub.Config) {})
}

// startHubWith starts a hub whose configuration change has adjusted.
func startHubWith(t testing.TB, change func(*hub.Config)) *testHub {
	t.Helper()
	dir := t.TempDir()
	th := &testHub{t: t, cfg: hub.Config{
		Listen:    "127.0.0.1:0",
		StoreDir:  filepath.Join(dir, "store"),
		CredsDir:  filepath.Join(dir, "creds"),
		Relays:    []string{"alpha", "beta"},
		Approvers: []string{"ann", "bob"},
	}}
	change(&th.cfg)
	th.start()
	_, port, err := net.SplitHostPort(th.h.URL()[len("nats://"):])
	if err != nil {
		t.Fatal(err)
	}
	th.cfg.Listen = "127.0.0.1:" + port
	t.Cleanup(func() {
		if th.h != nil {
			th.h.Shutdown()
		}
	})
	return th
}

func (th *testHub) start() {
	th.t.Helper()
	h, err := hub.Start(th.cfg)
	if err != nil {
		th.t.Fatal(err)
	}
	th.h = h
}

func (th *testHub) stop() {
	th.h.Shutdown()
	th.h = nil
}

func (th *testHub) url() string { return "nats://" + th.cfg.Listen }

func (th *testHub) creds(role, name string) hub.Creds {
	th.t.Helper()
	c, err := hub.ReadCreds(filepath.Join(th.cfg.CredsDir, role+"-"+name+".creds"))
	if err != nil {
		th.t.Fatal(err)
	}
	return c
}

// hubAt is where relays and approvers connect: an embedded hub or a
// cluster.
type hubAt interface {
	url() string
	creds(role, name string) hub.Creds
}

// testRelay is one host: its own agent dir, state dir and relay.
type testRelay struct {
	t        *testing.T
	host     string
	agentDir string
	stateDir string
	events   *testkit.Recorder[serve.Event]
	logs     *testkit.Recorder[string] // the relay's log messages
	srv      *serve.Server
	policy   atomic.Pointer[resolve.Policy]
	cancel   context.CancelFunc
	done     chan struct{}
	// stallFront: the server's front end reads nothing until the relay
	// stops, as a headless printer whose stdout blocks.
	stallFront bool
}

func newRelay(t *testing.T, th hubAt, host string) *testRelay {
	t.Helper()
	tr := &testRelay{t: t, host: host, agentDir: t.TempDir(), stateDir: t.TempDir()}
	tr.start(th)
	t.Cleanup(tr.stop)
	return tr
}

func (tr *testRelay) start(th hubAt) {
	t := tr.t
	t.Helper()
	tr.policy.Store(resolve.Load(resolve.LoadOptions{AgentDir: tr.agentDir, Home: tr.agentDir}))
	grants := NewGrants()
	if err := grants.ReadRecorded(tr.stateDir); err != nil {
		t.Log(err) // as permtui relay does: the bucket adds none
	}
	srv, err := serve.New(serve.Config{
		Layout:      wire.NewLayout(tr.agentDir),
		Sessions:    []string{rootID},
		StateDir:    tr.stateDir,
		Judge:       func() serve.Judge { return tr.policy.Load() },
		Grants:      grants,
		LeaveOnExit: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := hub.Connect(th.url(), th.creds(hub.RoleRelay, tr.host), hub.RoleRelay, tr.host)
	if err != nil {
		t.Fatal(err)
	}
	tr.logs = testkit.NewRecorder[string]()
	r, err := New(srv, nc, tr.host, grants, slog.New(logRecorder{tr.logs}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr.srv, tr.cancel, tr.done, tr.events = srv, cancel, make(chan struct{}), testkit.NewRecorder[serve.Event]()
	go func() { _ = srv.Run(ctx) }()
	relayed := make(chan struct{})
	go func() { defer close(relayed); r.Run(ctx) }()
	go func() {
		defer close(tr.done)
		defer nc.Close()
		if tr.stallFront {
			<-relayed
		}
		for ev := range srv.Events() {
			tr.events.Add(ev)
		}
		<-relayed
	}()
}

// stop ends the relay as a kill would for its asks: they stay on disk.
func (tr *testRelay) stop() {
	if tr.cancel != nil {
		tr.cancel()
		<-tr.done
		tr.cancel = nil
	}
}

func (tr *testRelay) child() *pichild.Child {
	return &pichild.Child{Layout: wire.NewLayout(tr.agentDir), Target: rootID, Poll: 20 * time.Millisecond, Timeout: time.Minute}
}

// ask runs a child's ask in the background.
func (tr *testRelay) ask(req *wire.Request) <-chan pichild.Result {
	out := make(chan pichild.Result, 1)
	go func() {
		res, err := tr.child().Ask(context.Background(), req)
		if err != nil {
			tr.t.Error(err)
		}
		out <- res
	}()
	return out
}

// key waits until the relay queues the ask of a request id and returns its
// name on the hub.
func (tr *testRelay) key(t *testing.T, requestID string) string {
	t.Helper()
	return askKey(tr.events.WaitFor(t, "relay queued "+requestID, func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == requestID
	}).(serve.AskQueued).Ask)
}

// audit reads the relay's decision records (delivery lines are not
// decisions).
func (tr *testRelay) audit() []serve.AuditRecord {
	tr.t.Helper()
	return tr.auditWith(serve.ReadAudit)
}

// auditWith reads tr's audit log with read (serve.ReadAudit, or
// serve.ReadAuditHistory for the revocations too).
func (tr *testRelay) auditWith(read func(string, func(serve.AuditRecord)) (int, error)) []serve.AuditRecord {
	tr.t.Helper()
	path := filepath.Join(tr.stateDir, "audit.jsonl")
	if _, err := os.Stat(path); err != nil {
		tr.t.Fatal(err) // a missing log would read as empty
	}
	var recs []serve.AuditRecord
	bad, err := read(path, func(r serve.AuditRecord) { recs = append(recs, r) })
	if err != nil || bad != 0 {
		tr.t.Fatalf("audit log: %d bad lines, %v", bad, err)
	}
	return recs
}

// logRecorder is a slog handler that records each message, its attributes
// after it.
type logRecorder struct{ *testkit.Recorder[string] }

func (h logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logRecorder) WithGroup(string) slog.Handler            { return h }
func (h logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	h.Add(line)
	return nil
}

// testApprover is an approver attached to the hub with its events recorded.
type testApprover struct {
	*Approver
	events *testkit.Recorder[serve.Event]
}

func newApprover(t *testing.T, th hubAt, name string) *testApprover {
	t.Helper()
	return newApproverWith(t, th, name, inbox.Budget{})
}

// newApproverWith attaches an approver that holds asks within budget.
func newApproverWith(t testing.TB, th hubAt, name string, budget inbox.Budget) *testApprover {
	t.Helper()
	nc, err := hub.Connect(th.url(), th.creds(hub.RoleApprover, name), hub.RoleApprover, name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewApprover(nc, name, nil, budget)
	if err != nil {
		t.Fatal(err)
	}
	ta := &testApprover{Approver: a, events: testkit.NewRecorder[serve.Event]()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go a.Run(ctx)
	go func() {
		defer close(done)
		for ev := range a.Events() {
			ta.events.Add(ev)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; nc.Close() })
	return ta
}

// queued waits until the approver shows the ask of a request id.
func (ta *testApprover) queued(t *testing.T, requestID string) serve.Ask {
	t.Helper()
	ev := ta.events.WaitFor(t, "queued "+requestID, func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == requestID
	})
	return ev.(serve.AskQueued).Ask
}

// decide decides until the approver is attached to the hub.
func (ta *testApprover) decide(t *testing.T, d serve.Decision) error {
	t.Helper()
	for {
		err := ta.Decide(d)
		if err != ErrNotReady {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// approves approves the ask id at the hub and checks that the child
// waiting on c is answered so.
func (ta *testApprover) approves(t *testing.T, id serve.AskID, c <-chan pichild.Result) {
	t.Helper()
	if err := ta.decide(t, serve.Decision{Ask: id, State: wire.StateApproved}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, c); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
}

// admin is a JetStream context as the hub's own user, to look at and
// arrange the hub's state directly.
func (th *testHub) admin(t *testing.T) jetstream.JetStream {
	t.Helper()
	nc, err := th.h.Admin()
	return jetStreamOf(t, nc, err)
}

// jetStream is a JetStream context with the credentials of role's name.
func (th *testHub) jetStream(t testing.TB, role, name string) jetstream.JetStream {
	t.Helper()
	nc, err := hub.Connect(th.url(), th.creds(role, name), role, name)
	return jetStreamOf(t, nc, err)
}

// jetStreamOf is a JetStream context over a connection just opened, closed
// when the test ends.
func jetStreamOf(t testing.TB, nc *nats.Conn, err error) jetstream.JetStream {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// raceHeadless attaches a headless approver (serve --headless --hub) for
// each name that denies every ask it is shown, until ctx ends; wait for
// the returned group after ending ctx.
func raceHeadless(t *testing.T, ctx context.Context, at hubAt, names ...string) *sync.WaitGroup {
	t.Helper()
	var racers sync.WaitGroup
	for _, name := range names {
		nc, err := hub.Connect(at.url(), at.creds(hub.RoleApprover, name), hub.RoleApprover, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		logs, out := testkit.NewRecorder[string](), &testkit.SyncBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s's log: %q", name, logs.Snapshot())
				for _, l := range strings.Split(out.String(), "\n") {
					if strings.Contains(l, `"error"`) {
						t.Logf("%s: %s", name, l)
					}
				}
			}
		})
		a, err := NewApprover(nc, name, slog.New(logRecorder{logs}), inbox.Budget{})
		if err != nil {
			t.Fatal(err)
		}
		racers.Add(2)
		go func() { defer racers.Done(); a.Run(ctx) }()
		go func() {
			defer racers.Done()
			if err := headless.Run(ctx, a, out, headless.Deny); err != nil {
				t.Error(err)
			}
		}()
	}
	return &racers
}

// consumerInfo is the state of a host's decision consumer at the hub.
func consumerInfo(t *testing.T, js jetstream.JetStream, host string) *jetstream.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	c, err := js.Consumer(ctx, hub.DecisionsStream, hub.RelayConsumer(host))
	if err != nil {
		t.Fatal(err)
	}
	return c.CachedInfo()
}

func bash(host string, i int, command string) *wire.Request {
	r := pichild.NewestBash(rootID, "builder", "child-"+host, "/w", command)
	r.ID = host + "-" + strconv.Itoa(i)
	return r
}

func answered(t *testing.T, c <-chan pichild.Result) *wire.ChildResponse {
	t.Helper()
	select {
	case res := <-c:
		if res.Outcome != pichild.Answered {
			t.Fatalf("child outcome %s", res.Outcome)
		}
		return res.Response
	case <-time.After(testkit.WaitLimit):
		t.Fatal("the child got no answer")
	}
	return nil
}
