package serve

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// benchServer serves a fresh root whose policy allows "ls"; decided
// receives every Decided event.
func benchServer(b *testing.B) (*Server, wire.Layout, <-chan Decided) {
	b.Helper()
	dir := b.TempDir()
	layout := wire.Layout{Root: filepath.Join(dir, "fwd")}
	judge := &fakeJudge{}
	judge.set("ls", ruleVerdict(resolve.Allow, "", "ls", "global", ""))
	s, err := New(Config{
		Layout: layout, Sessions: []string{rootID}, StateDir: filepath.Join(dir, "state"),
		Judge: func() Judge { return judge }, Grants: &fakeGrants{},
	})
	if err != nil {
		b.Fatal(err)
	}
	decided := make(chan Decided, 1024)
	go func() {
		for ev := range s.Events() {
			if d, ok := ev.(Decided); ok {
				decided <- d
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	for _, d := range []string{layout.RequestsDir(rootID), layout.ResponsesDir(rootID)} {
		if err := safefs.MkdirPrivate(d); err != nil {
			b.Fatal(err)
		}
	}
	return s, layout, decided
}

func writeBenchRequest(b *testing.B, layout wire.Layout, id string) {
	data, err := wire.MarshalRequest(intent(id, "impl", "bash", "ls"))
	if err != nil {
		b.Fatal(err)
	}
	if err := safefs.WriteFileAtomic(layout.RequestPath(rootID, id), data); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAutoDecidedLatency: one request at a time, from the child's
// atomic write to the Decided event (response written, audit fsync'd).
// arrival-µs/op is the server's share: detection to response written.
func BenchmarkAutoDecidedLatency(b *testing.B) {
	_, layout, decided := benchServer(b)
	var serverSide time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		writeBenchRequest(b, layout, fmt.Sprintf("1791279012345-lat%d-1", i))
		d := <-decided
		serverSide += d.Latency
	}
	b.ReportMetric(float64(serverSide.Microseconds())/float64(b.N), "arrival-µs/op")
}

// BenchmarkAutoDecidedThroughput: b.N requests written at once; the audit
// log's group commit shares fsyncs among them.
func BenchmarkAutoDecidedThroughput(b *testing.B) {
	s, layout, decided := benchServer(b)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		writeBenchRequest(b, layout, fmt.Sprintf("1791279012345-tp%d-1", i))
	}
	for i := 0; i < b.N; i++ {
		<-decided
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(s.audit.syncs.Load())/float64(b.N), "fsyncs/req")
}

// BenchmarkAuditAppend compares one writer at a time with many concurrent
// writers sharing fsyncs.
func BenchmarkAuditAppend(b *testing.B) {
	rec := AuditRecord{RequestID: "1791279012345-a-1", State: wire.StateApproved, DecidedBy: wire.UserDecision()}
	b.Run("sequential", func(b *testing.B) {
		l := newAuditLog(b.TempDir(), func(Event) {})
		defer l.close()
		for i := 0; i < b.N; i++ {
			if err := l.append(rec); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(l.syncs.Load())/float64(b.N), "fsyncs/record")
	})
	b.Run("parallel", func(b *testing.B) {
		l := newAuditLog(b.TempDir(), func(Event) {})
		defer l.close()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := l.append(rec); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(l.syncs.Load())/float64(b.N), "fsyncs/record")
	})
}
