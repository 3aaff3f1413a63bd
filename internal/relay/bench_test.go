package relay

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// BenchmarkAskLocal and BenchmarkAskThroughHub time one ask that needs a
// person, from the request file written to the response file written, with
// an approver that answers at once: locally through Server.Decide, and
// through the hub (relay → asks stream → approver → decisions bucket →
// relay). The difference is the latency the hub adds. The Parallel variants
// keep 32 asks in flight and report asks per second.
func BenchmarkAskLocal(b *testing.B)              { benchAsk(b, false, 1) }
func BenchmarkAskThroughHub(b *testing.B)         { benchAsk(b, true, 1) }
func BenchmarkAskLocalParallel(b *testing.B)      { benchAsk(b, false, 32) }
func BenchmarkAskThroughHubParallel(b *testing.B) { benchAsk(b, true, 32) }

func benchAsk(b *testing.B, overHub bool, inFlight int) {
	agentDir, stateDir := b.TempDir(), b.TempDir()
	policy := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, Home: agentDir})
	grants := NewGrants()
	srv, err := serve.New(serve.Config{
		Layout: wire.NewLayout(agentDir), Sessions: []string{rootID}, StateDir: stateDir,
		Judge: func() serve.Judge { return policy }, Grants: grants, LeaveOnExit: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	events := srv.Events()
	decide := func(id serve.AskID) { _ = srv.Decide(serve.Decision{Ask: id, State: wire.StateApproved}) }
	if overHub {
		th := startHub(b)
		nc, err := hub.Connect(th.url(), th.creds(hub.RoleRelay, "alpha"), hub.RoleRelay, "alpha")
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		r, err := New(srv, nc, "alpha", grants, nil)
		if err != nil {
			b.Fatal(err)
		}
		go r.Run(ctx)

		anc, err := hub.Connect(th.url(), th.creds(hub.RoleApprover, "ann"), hub.RoleApprover, "ann")
		if err != nil {
			b.Fatal(err)
		}
		defer anc.Close()
		a, err := NewApprover(anc, "ann", nil, inbox.Budget{})
		if err != nil {
			b.Fatal(err)
		}
		go a.Run(ctx)
		go func() {
			for ev := range a.Events() {
				if q, ok := ev.(serve.AskQueued); ok {
					go func() {
						for a.Decide(serve.Decision{Ask: q.Ask.ID, State: wire.StateApproved}) == ErrNotReady {
							time.Sleep(time.Millisecond)
						}
					}()
				}
			}
		}()
		decide = func(serve.AskID) {}
	}
	go func() { _ = srv.Run(ctx) }()

	answered := make(chan struct{}, inFlight)
	go func() {
		for ev := range events {
			switch ev := ev.(type) {
			case serve.AskQueued:
				go decide(ev.Ask.ID)
			case serve.Decided:
				answered <- struct{}{}
			}
		}
	}()

	layout := wire.NewLayout(agentDir)
	if err := safefs.MkdirPrivate(layout.RequestsDir(rootID)); err != nil {
		b.Fatal(err)
	}
	if err := safefs.MkdirPrivate(layout.ResponsesDir(rootID)); err != nil {
		b.Fatal(err)
	}
	write := func(i int) {
		req := pichild.NewestBash(rootID, "builder", "child", "/w", "make step"+strconv.Itoa(i))
		req.ID = "bench-" + strconv.Itoa(i)
		data, err := wire.MarshalRequest(req)
		if err == nil {
			err = safefs.WriteFileAtomic(layout.RequestPath(rootID, req.ID), data)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	// One ask before timing: the relay's consumer and the approver attach.
	write(-1)
	<-answered

	b.ResetTimer()
	start := time.Now()
	sent := 0
	for ; sent < min(inFlight, b.N); sent++ {
		write(sent)
	}
	for done := 0; done < b.N; done++ {
		<-answered
		if sent < b.N {
			write(sent)
			sent++
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "asks/s")
}

// BenchmarkReadRecorded times a relay's start reading the grants its audit
// log records (decision 0247): 10,000 decisions, each a whole-session
// grant, as one long-serving relay might keep.
func BenchmarkReadRecorded(b *testing.B) {
	dir := b.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, "audit.jsonl"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10_000 {
		line, err := json.Marshal(serve.AuditRecord{AskID: serve.AskID(i), RequestID: "r" + strconv.Itoa(i), ServedSession: rootID,
			Agent: "builder", Surface: "bash", MatchValues: []string{"npm test " + strconv.Itoa(i)}, State: wire.StateApprovedForServingSession,
			Approved: true, Grants: []wire.Grant{{Surface: "bash", Pattern: "npm test " + strconv.Itoa(i%100) + " *"}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		g := NewGrants()
		if err := g.ReadRecorded(dir); err != nil || len(g.own[rootID]) != 100 {
			b.Fatal(err, len(g.own[rootID]))
		}
	}
}
