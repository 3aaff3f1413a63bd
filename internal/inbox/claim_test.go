package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// Scenario 3 of issue 8: instances started at the same moment on one
// session (each with its own live pid, as separate permtui processes would
// have) must never both serve it; the losers say that permtui serves it, and
// one of them takes over when the holder stops.
func TestInstancesStartedTogetherNeverBothServeASession(t *testing.T) {
	const instances, trials = 4, 15
	pids := make([]int, instances)
	for i := range pids {
		pids[i] = liveProcess(t).Process.Pid
	}
	for trial := 0; trial < trials; trial++ {
		layout := wire.Layout{Root: filepath.Join(t.TempDir(), "sessions", "permission-forwarding")}
		rec := testkit.NewRecorder[Event]()
		type instance struct {
			pid  int
			stop context.CancelFunc
			done chan struct{}
		}
		var all []instance
		gate := make(chan struct{})
		var ready sync.WaitGroup
		for _, pid := range pids {
			in, err := New(Config{
				Layout: layout, Sessions: []string{servedID}, Poll: true, PID: pid,
				PollRescan: 10 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond, ContentionRecheck: 10 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				for ev := range in.Events() {
					switch ev := ev.(type) {
					case Serving:
						rec.Add(servingBy{pid})
					case ServedElsewhere:
						rec.Add(ev)
					}
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			ready.Add(1)
			go func() {
				defer close(done)
				ready.Done()
				<-gate
				_ = in.Run(ctx)
			}()
			all = append(all, instance{pid, cancel, done})
		}
		ready.Wait()
		close(gate)

		rec.WaitFor(t, "a server", func(ev Event) bool { _, ok := ev.(servingBy); return ok })
		// Several recheck rounds (10 ms each) for a second claim to show.
		time.Sleep(50 * time.Millisecond)
		servers := rec.Count(func(ev Event) bool { _, ok := ev.(servingBy); return ok })
		if servers != 1 {
			t.Fatalf("trial %d: %d instances serve the session", trial, servers)
		}
		holder := rec.WaitFor(t, "holder", func(ev Event) bool { _, ok := ev.(servingBy); return ok }).(servingBy).pid
		for _, ev := range rec.Snapshot() {
			if e, ok := ev.(ServedElsewhere); ok && !e.Permtui {
				t.Fatalf("trial %d: a loser does not say permtui serves the session: %+v", trial, e)
			}
		}

		// The holder stops: exactly one other instance takes over.
		for _, in := range all {
			if in.pid == holder {
				in.stop()
				<-in.done
			}
		}
		rec.WaitFor(t, "takeover", func(Event) bool {
			return rec.Count(func(ev Event) bool { s, ok := ev.(servingBy); return ok && s.pid != holder }) >= 1
		})
		// A few more recheck rounds: nobody else may claim it meanwhile.
		time.Sleep(50 * time.Millisecond)
		if n := rec.Count(func(ev Event) bool { s, ok := ev.(servingBy); return ok && s.pid != holder }); n != 1 {
			t.Fatalf("trial %d: %d instances took over", trial, n)
		}
		for _, in := range all {
			in.stop()
			<-in.done
		}
	}
}

// servingBy records which instance reported Serving.
type servingBy struct{ pid int }

func (servingBy) inboxEvent() {}

// The lock of a killed permtui goes a moment before its process does: a
// standby that finds the lock free but the record's process still running
// looks again after LockRecheck, not ContentionRecheck, and serves once the
// process is gone.
func TestAFreeLockWithALiveRecordIsLookedAtAgainSoon(t *testing.T) {
	holder := liveProcess(t)
	var mu sync.Mutex
	now := time.Now()
	h := start(t, func(c *Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		c.LockRecheck = 10 * time.Millisecond
		c.ContentionRecheck = time.Hour
		writeHB(t, c.Layout, servedID, holder.Process.Pid, now)
	})
	h.rec.WaitFor(t, "served elsewhere", func(ev Event) bool {
		s, ok := ev.(ServedElsewhere)
		return ok && s.PID == holder.Process.Pid && !s.Permtui
	})
	_ = holder.Process.Kill()
	_ = holder.Wait()
	mu.Lock()
	now = now.Add(10 * time.Millisecond)
	mu.Unlock()
	h.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
}

// A killed permtui lets go of its lock a moment before its process has
// finished exiting, and its record still looks fresh. The standby that saw
// it hold the lock takes over at once: waiting for the exit (a recheck,
// then ContentionRecheck) took it past the 2 s a child allows on a loaded
// machine (the crash test's 2.1 s takeovers).
func TestAStandbyTakesOverAtOnceFromTheHolderItSaw(t *testing.T) {
	holder := liveProcess(t).Process.Pid // still running: an exit in progress
	layout := wire.Layout{Root: filepath.Join(t.TempDir(), "sessions", "permission-forwarding")}
	writeHB(t, layout, servedID, holder, time.Now())
	serving, err := safefs.OpenDir(layout.ServingDir())
	if err != nil {
		t.Fatal(err)
	}
	defer serving.Close()
	lock, err := serving.TryLockFile(wire.EncodeSegment(servedID) + ".lock")
	if lock == nil || err != nil {
		t.Fatalf("TryLockFile = %v, %v", lock, err)
	}
	h := start(t, func(c *Config) {
		c.Layout = layout
		c.LockRecheck = 10 * time.Millisecond
		c.ContentionRecheck = time.Hour // only the lock may decide
	})
	h.rec.WaitFor(t, "served by the holder", func(ev Event) bool {
		e, ok := ev.(ServedElsewhere)
		return ok && e.PID == holder && e.Permtui
	})
	lock.Release() // the holder lets go, as in dying; its record stays, fresh, its pid alive
	h.rec.WaitFor(t, "takeover", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	if hb := readHB(t, layout.HeartbeatPath(servedID)); hb.PID != os.Getpid() {
		t.Fatalf("heartbeat after the takeover names %d", hb.PID)
	}
}

// F8 of the adversarial pass: a child's cleanup removes the empty session
// root after reading its answer (spec §2.5), and its next ask creates it
// again. The live holder keeps the session across any number of those; the
// standby, looking again while the directory is gone and once it is back,
// stays standing by, and nobody tells the holder that another node serves.
func TestAChildsCleanupOfTheSessionRootLeavesTheSessionWithItsHolder(t *testing.T) {
	pidA, pidB := liveProcess(t).Process.Pid, liveProcess(t).Process.Pid
	a := start(t, func(c *Config) { c.PID, c.LockRecheck = pidA, 10*time.Millisecond })
	a.rec.WaitFor(t, "serving", func(ev Event) bool { _, ok := ev.(Serving); return ok })
	layout := a.layout
	b := start(t, func(c *Config) { c.Layout, c.PID, c.LockRecheck = layout, pidB, 10*time.Millisecond })
	b.rec.WaitFor(t, "standing by", func(ev Event) bool {
		e, ok := ev.(ServedElsewhere)
		return ok && e.PID == pidA && e.Permtui
	})
	for round := range 3 {
		id := fmt.Sprintf("1791279012345-clean%d-1", round)
		path := a.send(servedID, id)
		a.rec.WaitFor(t, "the ask at the holder", arrivedID(id))
		b.in.recheckLocked()
		for _, p := range []string{path, layout.RequestsDir(servedID), layout.ResponsesDir(servedID), layout.SessionDir(servedID)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		b.in.recheckLocked()
		if b.in.served(servedID) {
			t.Fatalf("round %d: the standby serves the session the live holder serves", round)
		}
	}
	if !a.in.served(servedID) {
		t.Fatal("the holder no longer serves the session")
	}
	for _, ev := range a.rec.Snapshot() {
		if e, ok := ev.(ServedElsewhere); ok {
			t.Fatalf("the holder was told another node serves: %+v", e)
		}
	}
	if hb := readHB(t, layout.HeartbeatPath(servedID)); hb.PID != pidA {
		t.Fatalf("the heartbeat names %d, not the holder %d", hb.PID, pidA)
	}
}
