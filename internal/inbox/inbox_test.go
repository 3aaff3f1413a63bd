package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

const (
	servedID = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"
	otherID  = "0198c3a4-0000-7e8f-9a0b-1c2d3e4f5a6b"
)

type recorder = testkit.Recorder[Event]

func arrivedID(id string) func(Event) bool {
	return func(ev Event) bool {
		a, ok := ev.(Arrived)
		return ok && a.Request.ID == id
	}
}

func invalidAt(path string) func(Event) bool {
	return func(ev Event) bool {
		i, ok := ev.(Invalid)
		return ok && i.Path == path
	}
}

type harness struct {
	t      *testing.T
	layout wire.Layout
	rec    *recorder
	in     *Inbox
	stop   context.CancelFunc
	done   chan error

	releaseOnce sync.Once // startHeld's events recorded
}

// start runs an inbox over a fresh forwarding root. Rescans are slow unless
// the test polls, so fsnotify tests prove fsnotify.
func start(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, layout: wire.Layout{Root: filepath.Join(t.TempDir(), "sessions", "permission-forwarding")}, rec: testkit.NewRecorder[Event]()}
	cfg := Config{
		Layout:            h.layout,
		Sessions:          []string{servedID},
		Rescan:            time.Hour,
		PollRescan:        10 * time.Millisecond,
		HeartbeatInterval: 10 * time.Millisecond,
		ContentionRecheck: 10 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	in, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.in = in
	go record(in, h.rec)
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.done = cancel, make(chan error, 1)
	go func() { h.done <- in.Run(ctx) }()
	t.Cleanup(h.shutdown)
	return h
}

// startHeld is start with the events held: nothing reads them, and the
// channel has no buffer, so each emit waits for the test. The test reads
// what it needs from h.in.events, then release records the rest.
func startHeld(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, layout: wire.Layout{Root: filepath.Join(t.TempDir(), "sessions", "permission-forwarding")}, rec: testkit.NewRecorder[Event]()}
	cfg := Config{Layout: h.layout, Sessions: []string{servedID}, Rescan: time.Hour, HeartbeatInterval: time.Hour}
	tweak(&cfg)
	in, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	in.events = make(chan Event)
	h.in = in
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.done = cancel, make(chan error, 1)
	go func() { h.done <- in.Run(ctx) }()
	t.Cleanup(func() { h.release(); h.shutdown() })
	return h
}

// release records the events of a held inbox from now on (once).
func (h *harness) release() {
	h.releaseOnce.Do(func() { go record(h.in, h.rec) })
}

// record collects the inbox's events until the channel closes.
func record(in *Inbox, rec *recorder) {
	for ev := range in.Events() {
		rec.Add(ev)
	}
}

func (h *harness) shutdown() {
	h.stop()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	h.done <- nil // later shutdowns return at once
}

func requestJSON(id, target string) string {
	return fmt.Sprintf(`{"id":%q,"createdAt":1791279012345,"requesterSessionId":"child-1","targetSessionId":%q,"requesterAgentName":"implementer","source":"tool_call","surface":"bash","value":"ls"}`, id, target)
}

// writeRequest writes a request file the way a child does.
func (h *harness) writeRequest(session, name, body string) string {
	h.t.Helper()
	dir := h.layout.RequestsDir(session)
	if err := safefs.MkdirPrivate(dir); err != nil {
		h.t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := safefs.WriteFileAtomic(path, []byte(body)); err != nil {
		h.t.Fatal(err)
	}
	return path
}

func (h *harness) send(session, id string) string {
	return h.writeRequest(session, id+".json", requestJSON(id, session))
}

func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still exists (err %v)", path, err)
	}
}

func TestArrivalViaFsnotifyWhenTheRootAppearsLater(t *testing.T) {
	h := start(t, nil)
	h.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	// Claiming created (and locked) the session directory; requests/ is
	// the child's to create.
	if _, err := os.Stat(h.layout.RequestsDir(servedID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("requests/ should not exist yet")
	}
	// Rescans are an hour apart: only fsnotify can notice these.
	path := h.send(servedID, "1791279012345-aaaa-1")
	ev := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-aaaa-1")).(Arrived)
	if ev.Path != path || ev.Session != servedID || ev.Request.TargetSessionID != servedID {
		t.Fatalf("arrived = %+v", ev)
	}
	// A later request in the now-watched directory arrives too.
	h.send(servedID, "1791279012346-bbbb-1")
	h.rec.WaitFor(t, "second arrival", arrivedID("1791279012346-bbbb-1"))
}

func TestArrivalInPollMode(t *testing.T) {
	h := start(t, func(c *Config) { c.Poll = true })
	h.send(servedID, "1791279012345-poll-1")
	h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-poll-1"))
}

func TestEachRequestIsDeliveredOnce(t *testing.T) {
	h := start(t, func(c *Config) { c.Poll = true })
	h.send(servedID, "1791279012345-once-1")
	h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-once-1"))
	// Later passes see the file again; a marker proves some ran.
	h.send(servedID, "1791279012399-mark-1")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-1"))
	h.send(servedID, "1791279012399-mark-2")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-2"))
	if n := h.rec.Count(arrivedID("1791279012345-once-1")); n != 1 {
		t.Fatalf("delivered %d times", n)
	}
}

func TestWithdrawalIsReported(t *testing.T) {
	h := start(t, nil)
	path := h.send(servedID, "1791279012345-wd-1")
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-wd-1")).(Arrived).ID
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w := h.rec.WaitFor(t, "withdrawn", func(ev Event) bool {
		w, ok := ev.(Withdrawn)
		return ok && w.ID == id && w.Path == path && w.Session == servedID
	}).(Withdrawn)
	if w.Replaced {
		t.Fatal("a removed request is reported as replaced")
	}
	if err := h.in.Respond(id, approve()); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("Respond after withdrawal = %v", err)
	}
}

func TestInvalidMisroutedAndUnsafeFilesAreDeletedAndReported(t *testing.T) {
	h := start(t, nil)
	cases := map[string]string{
		"garbage.json":   `{"id":`,
		"notobject.json": `null`,
		"misrouted.json": requestJSON("1791279012345-mis-1", otherID),
		"unsafe.json":    requestJSON("../../escape", servedID),
	}
	paths := map[string]string{}
	for name, body := range cases {
		paths[name] = h.writeRequest(servedID, name, body)
	}
	for name, path := range paths {
		ev := h.rec.WaitFor(t, "invalid "+name, invalidAt(path)).(Invalid)
		if ev.Reason == "" || ev.Session != servedID {
			t.Errorf("%s: %+v", name, ev)
		}
		gone(t, path)
	}
	if n := h.rec.Count(isArrived); n != 0 {
		t.Fatalf("%d invalid requests were delivered", n)
	}
}

func TestTempAndNonJSONFilesAreIgnored(t *testing.T) {
	h := start(t, func(c *Config) { c.Poll = true })
	tmp := h.writeRequest(servedID, "1791279012345-t-1.json.4242.1791279012345.tmp", requestJSON("1791279012345-t-1", servedID))
	txt := h.writeRequest(servedID, "notes.txt", "hello")
	h.send(servedID, "1791279012399-mark-1")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-1"))
	h.send(servedID, "1791279012399-mark-2")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-2"))
	for _, p := range []string{tmp, txt} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was touched: %v", p, err)
		}
	}
	if n := h.rec.Count(arrivedID("1791279012345-t-1")); n != 0 {
		t.Fatal("a temp file was delivered")
	}
}

func TestSymlinkIsRemovedWithoutTouchingItsTarget(t *testing.T) {
	h := start(t, nil)
	target := filepath.Join(t.TempDir(), "outside.json")
	body := requestJSON("1791279012345-ln-1", servedID)
	if err := os.WriteFile(target, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := h.layout.RequestsDir(servedID)
	if err := safefs.MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "1791279012345-ln-1.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "invalid symlink", invalidAt(link))
	gone(t, link)
	if data, err := os.ReadFile(target); err != nil || string(data) != body {
		t.Fatalf("symlink target changed: %q, %v", data, err)
	}
	if h.rec.Count(arrivedID("1791279012345-ln-1")) != 0 {
		t.Fatal("a symlinked request was delivered")
	}
}

func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	h := start(t, nil)
	dir := h.layout.RequestsDir(servedID)
	if err := safefs.MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "1791279012345-fifo-1.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "invalid fifo", invalidAt(fifo))
	gone(t, fifo)
	// The loop is not stuck on the FIFO: later requests still arrive.
	h.send(servedID, "1791279012346-after-1")
	h.rec.WaitFor(t, "arrival after the fifo", arrivedID("1791279012346-after-1"))
}

func TestOversizedRequestIsRejected(t *testing.T) {
	h := start(t, nil)
	big := `{"id":"1791279012345-big-1","pad":"` + strings.Repeat("x", wire.MaxFileSize) + `"}`
	path := h.writeRequest(servedID, "1791279012345-big-1.json", big)
	ev := h.rec.WaitFor(t, "invalid oversized", invalidAt(path)).(Invalid)
	if !strings.Contains(ev.Reason, "1 MiB") {
		t.Fatalf("reason = %q", ev.Reason)
	}
	gone(t, path)
}

func approve() wire.Response {
	return wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: servedID, RespondedAt: 1791279020001, DecidedBy: wire.UserDecision()}
}

func TestRespondWritesTheResponseThenDeletesTheRequest(t *testing.T) {
	h := start(t, nil)
	path := h.writeRequest(servedID, "by-name.json", requestJSON("1791279012345-rs-1", servedID))
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-rs-1")).(Arrived).ID
	if err := h.in.Respond(id, approve()); err != nil {
		t.Fatal(err)
	}
	gone(t, path)
	// Named by the id inside the file, not by the request's file name.
	respPath := h.layout.ResponsePath(servedID, "1791279012345-rs-1")
	st, err := os.Stat(respPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("response mode %v", st.Mode().Perm())
	}
	data, _ := os.ReadFile(respPath)
	got, err := wire.ReadResponseAsChild(data)
	if err != nil || !got.Approved || got.State != wire.StateApproved {
		t.Fatalf("child reads %+v, %v from %s", got, err, data)
	}
	if err := h.in.Respond(id, approve()); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("second Respond = %v", err)
	}
}

func TestRespondToAWithdrawnRequestWritesNothing(t *testing.T) {
	// No rescan after the first, so only Respond can notice the removal.
	var path string
	h := start(t, func(c *Config) {
		c.Poll, c.PollRescan = true, time.Hour
		early := &harness{t: t, layout: c.Layout}
		path = early.send(servedID, "1791279012345-gone-1")
	})
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-gone-1")).(Arrived).ID
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := h.in.Respond(id, approve()); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("Respond = %v, want ErrWithdrawn", err)
	}
	gone(t, h.layout.ResponsePath(servedID, "1791279012345-gone-1"))
}

func TestFailedResponseWriteKeepsTheRequestWithoutRedelivery(t *testing.T) {
	h := start(t, func(c *Config) { c.Poll = true })
	path := h.send(servedID, "1791279012345-wf-1")
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-wf-1")).(Arrived).ID
	// A regular file where responses/ belongs makes mkdir and the write fail,
	// even for root.
	respDir := h.layout.ResponsesDir(servedID)
	_ = os.Remove(respDir)
	if err := os.WriteFile(respDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.in.Respond(id, approve()); err == nil {
		t.Fatal("Respond succeeded with responses/ blocked")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("request not kept: %v", err)
	}
	h.send(servedID, "1791279012399-mark-1")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-1"))
	h.send(servedID, "1791279012399-mark-2")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-2"))
	if n := h.rec.Count(arrivedID("1791279012345-wf-1")); n != 1 {
		t.Fatalf("delivered %d times", n)
	}
	if err := os.Remove(respDir); err != nil {
		t.Fatal(err)
	}
	if err := h.in.Respond(id, approve()); err != nil {
		t.Fatalf("retry: %v", err)
	}
	gone(t, path)
	if _, err := os.Stat(h.layout.ResponsePath(servedID, "1791279012345-wf-1")); err != nil {
		t.Fatal(err)
	}
}

func readHeartbeatFile(path string) (wire.Heartbeat, bool) {
	data, err := safefs.ReadRegularFile(path, wire.MaxFileSize)
	if err != nil {
		return wire.Heartbeat{}, false
	}
	hb, err := wire.ParseHeartbeat(data)
	return hb, err == nil
}

func readHB(t *testing.T, path string) wire.Heartbeat {
	t.Helper()
	hb, ok := readHeartbeatFile(path)
	if !ok {
		t.Fatalf("no usable heartbeat at %s", path)
	}
	return hb
}

func TestHeartbeatIsPublishedRefreshedAndRemoved(t *testing.T) {
	h := start(t, nil)
	h.rec.WaitFor(t, "serving", func(ev Event) bool { s, ok := ev.(Serving); return ok && s.Session == servedID })
	path := h.layout.HeartbeatPath(servedID)
	first := readHB(t, path)
	if first.PID != os.Getpid() || first.SessionID != servedID {
		t.Fatalf("heartbeat %+v", first)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("heartbeat mode %v, %v", st.Mode().Perm(), err)
	}
	if st, err := os.Stat(h.layout.ServingDir()); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("serving/ mode %v, %v", st.Mode().Perm(), err)
	}
	deadline := time.After(testkit.WaitLimit)
	for readHB(t, path).UpdatedAt == first.UpdatedAt {
		select {
		case <-deadline:
			t.Fatal("heartbeat never refreshed")
		case <-time.After(5 * time.Millisecond):
		}
	}
	h.shutdown()
	gone(t, path)
}

func TestHeartbeatReappearsWhenDeleted(t *testing.T) {
	h := start(t, nil)
	h.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	path := h.layout.HeartbeatPath(servedID)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(testkit.WaitLimit)
	for {
		if _, ok := readHeartbeatFile(path); ok {
			return
		}
		select {
		case <-deadline:
			t.Fatal("heartbeat not rewritten")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// liveProcess starts a process that stays alive for the test.
func liveProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func writeHB(t *testing.T, layout wire.Layout, session string, pid int, at time.Time) {
	t.Helper()
	data, err := wire.MarshalHeartbeat(wire.Heartbeat{SessionID: session, PID: pid, UpdatedAt: at.UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := safefs.MkdirPrivate(layout.ServingDir()); err != nil {
		t.Fatal(err)
	}
	if err := safefs.WriteFileAtomic(layout.HeartbeatPath(session), data); err != nil {
		t.Fatal(err)
	}
}

func TestAnotherLiveServerKeepsTheSessionUntilItGoesAway(t *testing.T) {
	other := liveProcess(t)
	pid := other.Process.Pid
	layout := wire.Layout{Root: filepath.Join(t.TempDir(), "fwd")}
	// The other node keeps its record fresh, as pi does.
	stopOther := make(chan struct{})
	otherDone := make(chan struct{})
	writeHB(t, layout, servedID, pid, time.Now())
	go func() {
		defer close(otherDone)
		for {
			select {
			case <-stopOther:
				return
			case <-time.After(5 * time.Millisecond):
				writeHB(t, layout, servedID, pid, time.Now())
			}
		}
	}()

	rec := testkit.NewRecorder[Event]()
	in, err := New(Config{
		Layout: layout, Sessions: []string{servedID, otherID}, Poll: true,
		PollRescan: 10 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond, ContentionRecheck: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	go record(in, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h := &harness{t: t, layout: layout, rec: rec, in: in}

	elsewhere := rec.WaitFor(t, "served elsewhere", func(ev Event) bool {
		s, ok := ev.(ServedElsewhere)
		return ok && s.Session == servedID
	}).(ServedElsewhere)
	if elsewhere.PID != pid {
		t.Fatalf("pid %d, want %d", elsewhere.PID, pid)
	}
	contested := h.send(servedID, "1791279012345-elsewhere-1")
	// Two full passes over the uncontested session prove the contested
	// request was seen and left alone.
	h.send(otherID, "1791279012399-mark-1")
	rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-1"))
	h.send(otherID, "1791279012399-mark-2")
	rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-2"))
	if rec.Count(arrivedID("1791279012345-elsewhere-1")) != 0 {
		t.Fatal("a request of a session served elsewhere was delivered")
	}
	if _, err := os.Stat(contested); err != nil {
		t.Fatalf("contested request touched: %v", err)
	}
	if hb := readHB(t, layout.HeartbeatPath(servedID)); hb.PID != pid {
		t.Fatalf("the other node's record was overwritten: %+v", hb)
	}
	if rec.Count(func(ev Event) bool { s, ok := ev.(Serving); return ok && s.Session == servedID }) != 0 {
		t.Fatal("served a contested session")
	}

	// The other node exits: permtui takes the session over.
	close(stopOther)
	<-otherDone
	_ = other.Process.Kill()
	_ = other.Wait()
	rec.WaitFor(t, "serving after takeover", func(ev Event) bool { s, ok := ev.(Serving); return ok && s.Session == servedID })
	rec.WaitFor(t, "contested request delivered", arrivedID("1791279012345-elsewhere-1"))
	if hb := readHB(t, layout.HeartbeatPath(servedID)); hb.PID != os.Getpid() {
		t.Fatalf("heartbeat after takeover: %+v", hb)
	}
}

func TestStaleOrDeadHeartbeatsDoNotBlockServing(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := liveProcess(t)
	cases := map[string]wire.Heartbeat{
		"dead pid, fresh": {PID: dead.Process.Pid, UpdatedAt: time.Now().UnixMilli()},
		"live pid, stale": {PID: live.Process.Pid, UpdatedAt: time.Now().Add(-10 * time.Second).UnixMilli()},
		// Forged records (issue 8 scenario 7): a time far in the future never
		// goes stale by age, and pid 1 is always alive.
		"live pid, far future":  {PID: live.Process.Pid, UpdatedAt: 99999999999999},
		"live pid, 1 min ahead": {PID: live.Process.Pid, UpdatedAt: time.Now().Add(time.Minute).UnixMilli()},
	}
	for name, hb := range cases {
		t.Run(name, func(t *testing.T) {
			var layout wire.Layout
			h := start(t, func(c *Config) {
				layout = c.Layout
				writeHB(t, layout, servedID, hb.PID, time.UnixMilli(hb.UpdatedAt))
			})
			h.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
			if got := readHB(t, layout.HeartbeatPath(servedID)); got.PID != os.Getpid() {
				t.Fatalf("heartbeat %+v", got)
			}
			if h.rec.Count(func(ev Event) bool { _, ok := ev.(ServedElsewhere); return ok }) != 0 {
				t.Fatal("reported served elsewhere")
			}
		})
	}
}

// A record that names a live pid (pid 1 here, always alive) blocks the id
// only while someone keeps it fresh: written once, it stops blocking when
// it goes stale (decision 0051).
func TestAForgedRecordThatIsNotRefreshedStopsBlocking(t *testing.T) {
	h := start(t, func(c *Config) {
		writeHB(t, c.Layout, servedID, 1, time.Now())
	})
	h.rec.WaitFor(t, "served elsewhere", func(ev Event) bool { s, ok := ev.(ServedElsewhere); return ok && s.PID == 1 })
	h.rec.WaitFor(t, "serving once the record is stale", func(ev Event) bool { _, ok := ev.(Serving); return ok })
}

func TestDiscoveryServesCanonicalSessionDirectoriesCreatedLater(t *testing.T) {
	h := start(t, func(c *Config) { c.Sessions = nil })
	// Not canonical: lowercase escape, and an encoding of "unknown".
	for _, name := range []string{"a%2fb", "unknown"} {
		dir := filepath.Join(h.layout.SessionsDir(), name, "requests")
		if err := safefs.MkdirPrivate(dir); err != nil {
			t.Fatal(err)
		}
	}
	odd := "a b/c:d"
	h.send(odd, "1791279012345-disc-1")
	ev := h.rec.WaitFor(t, "discovered arrival", arrivedID("1791279012345-disc-1")).(Arrived)
	if ev.Session != odd {
		t.Fatalf("session %q", ev.Session)
	}
	if filepath.Base(h.layout.SessionDir(odd)) != "a%20b%2Fc%3Ad" {
		t.Fatal("layout encoding changed")
	}
	for _, ev := range h.rec.Snapshot() {
		if s, ok := ev.(Serving); ok && s.Session != odd {
			t.Fatalf("served a non-canonical directory: %q", s.Session)
		}
	}
	if _, ok := readHeartbeatFile(h.layout.HeartbeatPath(odd)); !ok {
		t.Fatal("no heartbeat for the discovered session")
	}
}

func TestNewRejectsUnusableSessionIDs(t *testing.T) {
	for _, id := range []string{"", "  ", "unknown", "UNKNOWN", ".."} {
		_, err := New(Config{Layout: wire.Layout{Root: t.TempDir()}, Sessions: []string{id}})
		if err == nil {
			t.Errorf("accepted session id %q", id)
		}
	}
}

func TestSymlinkedRequestsDirectoryIsNotFollowed(t *testing.T) {
	h := start(t, func(c *Config) { c.Poll, c.Sessions = true, []string{servedID, otherID} })
	outside := t.TempDir()
	victim := filepath.Join(outside, "1791279012345-out-1.json")
	if err := os.WriteFile(victim, []byte(requestJSON("1791279012345-out-1", servedID)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := safefs.MkdirPrivate(h.layout.SessionDir(servedID)); err != nil {
		t.Fatal(err)
	}
	reqDir := h.layout.RequestsDir(servedID)
	if err := os.Symlink(outside, reqDir); err != nil {
		t.Fatal(err)
	}
	h.rec.WaitFor(t, "invalid requests dir", invalidAt(reqDir))
	// Two arrivals in another session prove later passes ran.
	h.send(otherID, "1791279012399-mark-1")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-1"))
	h.send(otherID, "1791279012399-mark-2")
	h.rec.WaitFor(t, "marker", arrivedID("1791279012399-mark-2"))
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("file behind the symlink was touched: %v", err)
	}
	if h.rec.Count(arrivedID("1791279012345-out-1")) != 0 {
		t.Fatal("a request behind a symlinked requests/ was delivered")
	}
	if n := h.rec.Count(invalidAt(reqDir)); n != 1 {
		t.Fatalf("reported %d times", n)
	}
}

func TestRespondRefusesASymlinkedResponsesDirectory(t *testing.T) {
	h := start(t, nil)
	path := h.send(servedID, "1791279012345-rl-1")
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-rl-1")).(Arrived).ID
	outside := t.TempDir()
	respDir := h.layout.ResponsesDir(servedID)
	_ = os.Remove(respDir)
	if err := os.Symlink(outside, respDir); err != nil {
		t.Fatal(err)
	}
	if err := h.in.Respond(id, approve()); err == nil {
		t.Fatal("wrote through a symlinked responses/")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the inbox: %v", entries)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("request not kept: %v", err)
	}
}

// Nobody reads the events: the scan waits on the full channel, yet Run
// still returns when its context ends, and the channel is closed then.
func TestRunReturnsAndClosesEventsWhenNobodyReads(t *testing.T) {
	layout := wire.Layout{Root: filepath.Join(t.TempDir(), "sessions", "permission-forwarding")}
	h := &harness{t: t, layout: layout}
	for i := range eventBuffer + 10 {
		h.writeRequest(servedID, fmt.Sprintf("bad-%d.json", i), "not json")
	}
	in, err := New(Config{Layout: layout, Sessions: []string{servedID}, Poll: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	for len(in.Events()) < eventBuffer { // the scan has filled the channel
		runtime.Gosched()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := 0
	for range in.Events() {
		n++
	}
	if n != eventBuffer {
		t.Fatalf("%d events buffered, want %d", n, eventBuffer)
	}
}

// replace rewrites a delivered request file under the same name with other
// content, as a child retrying a request id does (temp + rename, a new file).
func (h *harness) replace(path, id, value string) {
	h.t.Helper()
	body := strings.Replace(requestJSON(id, servedID), `"value":"ls"`, `"value":`+fmt.Sprintf("%q", value), 1)
	if err := safefs.WriteFileAtomic(path, []byte(body)); err != nil {
		h.t.Fatal(err)
	}
}

// A decision belongs to the delivery a person saw. When the file under the
// same name is another request by the time the answer is written (the child
// withdrew and retried faster than the inbox noticed), nothing is written:
// the answer to `ls` must not become the answer to `rm -rf /` (issue 7).
func TestRespondToAReplacedRequestWritesNothing(t *testing.T) {
	var path string
	h := start(t, func(c *Config) {
		c.Poll, c.PollRescan = true, time.Hour // only Respond can notice
		early := &harness{t: t, layout: c.Layout}
		path = early.send(servedID, "1791279012345-re-1")
	})
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-re-1")).(Arrived).ID
	h.replace(path, "1791279012345-re-1", "rm -rf /")
	if err := h.in.Respond(id, approve()); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("Respond = %v, want ErrWithdrawn", err)
	}
	gone(t, h.layout.ResponsePath(servedID, "1791279012345-re-1"))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the new request was deleted: %v", err)
	}
}

// The inbox notices a replaced request file: the old delivery is withdrawn,
// saying its file was replaced (the child did not stop waiting), and the
// new content arrives as a new ask.
func TestAReplacedRequestIsWithdrawnAndDeliveredAnew(t *testing.T) {
	h := start(t, nil)
	path := h.send(servedID, "1791279012345-re-2")
	first := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-re-2")).(Arrived).ID
	h.replace(path, "1791279012345-re-2", "rm -rf /")
	h.rec.WaitFor(t, "withdrawn as replaced", func(ev Event) bool { w, ok := ev.(Withdrawn); return ok && w.ID == first && w.Replaced })
	second := h.rec.WaitFor(t, "second delivery", func(ev Event) bool {
		a, ok := ev.(Arrived)
		return ok && a.ID != first && a.Request.Value != nil && *a.Request.Value == "rm -rf /"
	}).(Arrived)
	if err := h.in.Respond(second.ID, approve()); err != nil {
		t.Fatal(err)
	}
}

// An answer still in responses/<id>.json, which its child has not read, is
// never replaced: Respond writes nothing, says why, keeps the request in
// flight, and writes once the child took the earlier answer (decision 0201).
func TestRespondNeverReplacesAnUnreadAnswer(t *testing.T) {
	h := start(t, nil)
	path := h.send(servedID, "1791279012345-ur-1")
	id := h.rec.WaitFor(t, "arrived", arrivedID("1791279012345-ur-1")).(Arrived).ID
	respPath := h.layout.ResponsePath(servedID, "1791279012345-ur-1")
	earlier := []byte(`{"approved":false,"state":"denied"}`)
	if err := safefs.MkdirPrivate(filepath.Dir(respPath)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(respPath, earlier, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.in.Respond(id, approve()); !errors.Is(err, ErrAnswerUnread) {
		t.Fatalf("Respond = %v, want ErrAnswerUnread", err)
	}
	if data, err := os.ReadFile(respPath); err != nil || string(data) != string(earlier) {
		t.Fatalf("the earlier answer became %q, %v", data, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("request not kept: %v", err)
	}
	if err := os.Remove(respPath); err != nil { // the earlier child reads it
		t.Fatal(err)
	}
	if err := h.in.Respond(id, approve()); err != nil {
		t.Fatalf("once read: %v", err)
	}
	gone(t, path)
	data, _ := os.ReadFile(respPath)
	if got, err := wire.ReadResponseAsChild(data); err != nil || !got.Approved {
		t.Fatalf("child reads %+v, %v", got, err)
	}
}
