package pichild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

const (
	served    = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"
	childSess = "0198c3b0-1111-7222-8333-944455556666"
)

// fakeServer answers every request in the served inbox with answer(req),
// the way a serving node does: response written atomically, then the
// request deleted. It stops when ctx ends.
func fakeServer(ctx context.Context, t *testing.T, l wire.Layout, answer func(*wire.Request) []byte) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			names, _ := filepath.Glob(filepath.Join(l.RequestsDir(served), "*.json"))
			for _, name := range names {
				data, err := safefs.ReadRegularFile(name, wire.MaxFileSize)
				if err != nil {
					continue
				}
				req, err := wire.ParseRequest(data)
				if err != nil || !req.RoutedTo(served) {
					t.Errorf("child wrote an unservable request: %v\n%s", err, data)
					os.Remove(name)
					continue
				}
				if err := safefs.WriteFileAtomic(l.ResponsePath(served, req.ID), answer(req)); err != nil {
					t.Errorf("response write: %v", err)
					continue
				}
				os.Remove(name)
			}
		}
	}()
	return &wg
}

func approve(*wire.Request) []byte {
	data, err := wire.MarshalResponse(wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: served,
		RespondedAt: time.Now().UnixMilli(), DecidedBy: wire.UserDecision()})
	if err != nil {
		panic(err)
	}
	return data
}

func publishHeartbeat(t *testing.T, l wire.Layout, updatedAt int64) {
	t.Helper()
	data, err := wire.MarshalHeartbeat(wire.Heartbeat{SessionID: served, PID: os.Getpid(), UpdatedAt: updatedAt})
	if err != nil {
		t.Fatal(err)
	}
	if err := safefs.MkdirPrivate(l.ServingDir()); err != nil {
		t.Fatal(err)
	}
	if err := safefs.WriteFileAtomic(l.HeartbeatPath(served), data); err != nil {
		t.Fatal(err)
	}
}

func assertGone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (%v)", p, err)
		}
	}
}

func TestAskAnswered(t *testing.T) {
	l := wire.NewLayout(t.TempDir())
	publishHeartbeat(t, l, time.Now().Add(time.Hour).UnixMilli())
	ctx, cancel := context.WithCancel(context.Background())
	var seen *wire.Request
	var mu sync.Mutex
	wg := fakeServer(ctx, t, l, func(r *wire.Request) []byte {
		mu.Lock()
		seen = r
		mu.Unlock()
		return approve(r)
	})
	defer func() { cancel(); wg.Wait() }()

	c := &Child{Layout: l, Target: " " + served + " ", Poll: 5 * time.Millisecond, Liveness: true}
	req := NewestBash(served, "implementer", childSess, "/w", "pnpm test")
	res, err := c.Ask(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Answered || res.Response == nil || !res.Response.Approved || res.Response.DecidedByStatus != wire.DecidedByKept {
		t.Fatalf("result %+v", res)
	}
	if res.RequestID != req.ID {
		t.Fatalf("request id %s, want the builder's %s", res.RequestID, req.ID)
	}
	assertGone(t, l.RequestPath(served, req.ID), l.ResponsePath(served, req.ID))
	mu.Lock()
	defer mu.Unlock()
	want := *req
	if !reflect.DeepEqual(*seen, want) {
		t.Fatalf("server read\n%+v\nwant\n%+v", *seen, want)
	}
	for _, dir := range []string{l.SessionDir(served), l.RequestsDir(served), l.ResponsesDir(served)} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", dir, fi, err)
		}
	}
}

func TestAskUnreadableDeniesAndDeletes(t *testing.T) {
	l := wire.NewLayout(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	wg := fakeServer(ctx, t, l, func(*wire.Request) []byte { return []byte(`{"approved":true,"state":"allowed"}`) })
	defer func() { cancel(); wg.Wait() }()

	c := &Child{Layout: l, Target: served, Poll: 5 * time.Millisecond}
	res, err := c.Ask(context.Background(), LegacyBash(served, "researcher", childSess, "npm install left-pad"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Unreadable || res.Response != nil || string(res.Raw) != `{"approved":true,"state":"allowed"}` {
		t.Fatalf("result %+v", res)
	}
	assertGone(t, l.RequestPath(served, res.RequestID), l.ResponsePath(served, res.RequestID))
}

func TestAskAbandonsWithoutHeartbeat(t *testing.T) {
	l := wire.NewLayout(t.TempDir())
	c := &Child{Layout: l, Target: served, Poll: 50 * time.Millisecond, Liveness: true}
	res, err := c.Ask(context.Background(), NewestSkill(served, "implementer", childSess, "/w", "deploy-prod"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Abandoned {
		t.Fatalf("outcome %s, want abandoned", res.Outcome)
	}
	assertGone(t, l.RequestPath(served, res.RequestID))
}

// steppingClock advances by step on every reading, so waits need no sleeping.
func steppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := time.UnixMilli(1_791_279_000_000)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}

func TestAskLivenessClassification(t *testing.T) {
	clockStart := int64(1_791_279_000_000)
	cases := []struct {
		name      string
		updatedAt int64 // 0: no heartbeat
		liveness  bool
		want      Outcome
	}{
		{"alive heartbeat: waits until the timeout", clockStart + 3_600_000, true, TimedOut},
		{"stale heartbeat: abandons", clockStart - 10_000, true, Abandoned},
		{"no heartbeat: abandons", 0, true, Abandoned},
		{"no heartbeat, 20.7.3 child: waits until the timeout", 0, false, TimedOut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := wire.NewLayout(t.TempDir())
			if tc.updatedAt != 0 {
				publishHeartbeat(t, l, tc.updatedAt)
			}
			c := &Child{Layout: l, Target: served, Poll: time.Millisecond, Timeout: 10 * time.Second,
				Liveness: tc.liveness, Now: steppingClock(300 * time.Millisecond)}
			res, err := c.Ask(context.Background(), NewestMCP(served, "implementer", childSess, "/w", "exa:web_search_exa"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s", res.Outcome, tc.want)
			}
			assertGone(t, l.RequestPath(served, res.RequestID))
		})
	}
}

func TestAskWriteFailedAndCancel(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Child{Layout: wire.Layout{Root: file}, Target: served}
	res, err := c.Ask(context.Background(), NewestBash(served, "a", childSess, "/w", "ls"))
	if err != nil || res.Outcome != WriteFailed {
		t.Fatalf("root under a file: %+v %v", res, err)
	}

	if _, err := (&Child{Layout: wire.NewLayout(dir), Target: "unknown"}).Ask(context.Background(), NewestBash(served, "a", childSess, "/w", "ls")); err == nil {
		t.Fatal("asked a target that is no id")
	}

	l := wire.NewLayout(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err = (&Child{Layout: l, Target: served, Poll: 5 * time.Millisecond}).Ask(ctx, NewestBash(served, "a", childSess, "/w", "ls"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	assertGone(t, l.RequestPath(served, res.RequestID))
}

func TestAskMintsIDAndCleansEmptyDirs(t *testing.T) {
	l := wire.NewLayout(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	wg := fakeServer(ctx, t, l, approve)
	defer func() { cancel(); wg.Wait() }()

	c := &Child{Layout: l, Target: served, PID: 4242, Poll: 5 * time.Millisecond, RemoveEmptyDirs: true}
	req := LegacyBash(served, "r", childSess, "ls")
	req.ID = ""
	res, err := c.Ask(context.Background(), req)
	if err != nil || res.Outcome != Answered {
		t.Fatalf("%+v %v", res, err)
	}
	if !regexp.MustCompile(`^\d{13}-[0-9a-z]{1,8}-4242$`).MatchString(res.RequestID) {
		t.Fatalf("minted id %q", res.RequestID)
	}
	assertGone(t, l.SessionDir(served))

	// A foreign file keeps requests/, so responses/ and the root stay too.
	if err := safefs.MkdirPrivate(l.RequestsDir(served)); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(l.RequestsDir(served), "x.tmp")
	if err := os.WriteFile(foreign, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Ask(context.Background(), LegacyBash(served, "r", childSess, "ls")); err != nil || res.Outcome != Answered {
		t.Fatalf("%+v %v", res, err)
	}
	for _, p := range []string{foreign, l.ResponsesDir(served), l.SessionDir(served)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

func TestAskNeverRemovesADirectoryInPlaceOfTheResponse(t *testing.T) {
	l := wire.NewLayout(t.TempDir())
	req := LegacyBash(served, "researcher", childSess, "ls")
	req.ID = "1791279012345-dirresp-1"
	respPath := l.ResponsePath(served, req.ID)
	if err := os.MkdirAll(respPath, 0o700); err != nil {
		t.Fatal(err)
	}
	c := &Child{Layout: l, Target: served, Poll: 5 * time.Millisecond}
	res, err := c.Ask(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Unreadable {
		t.Fatalf("outcome %s", res.Outcome)
	}
	if st, err := os.Lstat(respPath); err != nil || !st.IsDir() {
		t.Fatalf("directory removed: %v", err)
	}
	assertGone(t, l.RequestPath(served, req.ID))
}
