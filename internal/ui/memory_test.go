package ui

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// Issue 8 scenario 2: what the console keeps after or beside an ask is
// bounded in bytes, however large the request's strings are (a request file
// may be 1 MiB, so one string may be about 1 MiB).

const mib = 1 << 20

// huge is a distinct string of n bytes, so nothing is shared between asks.
func huge(i, n int) string {
	p := fmt.Sprintf("%08d", i)
	return p + strings.Repeat("x", n-len(p))
}

// liveHeap is the heap in use after collecting garbage: what is retained.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapAlloc
}

// retained runs f and reports how much more heap is live afterwards.
func retained(f func()) uint64 {
	before := liveHeap()
	f()
	after := liveHeap()
	if after < before {
		return 0
	}
	return after - before
}

// hugeDecision is an automatic answer to an ask whose agent, value, rule
// pattern and denial reason are each about 1 MiB (agent i: distinct).
func hugeDecision(i int, agent string) serve.Decided {
	r := &wire.Request{ID: fmt.Sprintf("1796233170000-m%d-48311", i), RequesterAgentName: agent,
		Surface: sp("bash"), Value: sp(huge(i, mib)), CreatedAt: ms(testNow)}
	a := ask(r.ID+".json", r, askVerdict("x"))
	by := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp(huge(i, mib)), Origin: sp("global")}
	return serve.Decided{Ask: a, Auto: true,
		Response: wire.Response{State: wire.StateDeniedWithReason, DenialReason: huge(i, mib), DecidedBy: by}}
}

// The decision log keeps a clipped label per answer, not the request: 200
// answers of 3 MiB of strings each leave well under 8 MiB behind.
func TestDecisionLogKeepsBoundedBytesPerEntry(t *testing.T) {
	h := newHarness(t)
	const n = 200
	got := retained(func() {
		for i := range n {
			h.events(hugeDecision(i, "reviewer"))
		}
	})
	if len(h.m.log) != n {
		t.Fatalf("log has %d entries, want %d", len(h.m.log), n)
	}
	if got > 8*mib {
		t.Fatalf("%d answers of ~3 MiB of strings left %d MiB live, want under 8", n, got/mib)
	}
	for _, l := range h.m.log {
		if s := l.size(); s > maxLogEntryBytes {
			t.Fatalf("a log entry keeps %d bytes of text, want at most %d", s, maxLogEntryBytes)
		}
	}
	// What is cut says so, with how much: 1 MiB less the 1 KiB kept.
	if l := h.m.log[0]; !strings.Contains(l.label, "…[1047552 bytes left out]…") || !strings.HasPrefix(l.label, "reviewer · bash · 00000000x") {
		t.Fatalf("the log does not say what it cut: %.200q", l.label)
	}
	h.keys("l")
	if v := h.m.View(); !strings.Contains(v, "bytes left") {
		t.Fatalf("the log does not say what it cut:\n%s", v)
	}
	runtime.KeepAlive(h)
}

// Per-agent counts keep at most maxAgents names, each clipped; the rest are
// counted together and said to be.
func TestAutoCountsPerAgentAreBounded(t *testing.T) {
	h := newHarness(t)
	const n = maxAgents + 36
	got := retained(func() {
		for i := range n {
			h.events(hugeDecision(i, huge(i, mib)))
		}
	})
	if len(h.m.autoByAgent) > maxAgents {
		t.Fatalf("%d agents counted by name, want at most %d", len(h.m.autoByAgent), maxAgents)
	}
	if got > 8*mib {
		t.Fatalf("%d agents with 1 MiB names left %d MiB live, want under 8", n, got/mib)
	}
	v := h.m.View()
	if !strings.Contains(v, "auto by agent:") {
		t.Fatalf("no per-agent line:\n%s", v)
	}
	if h.m.otherAgents.denied != n-maxAgents {
		t.Fatalf("other agents counted %+v, want %d denied", h.m.otherAgents, n-maxAgents)
	}
	if line := ansi.Strip(strings.Join(h.m.activityLines(), "\n")); !strings.HasSuffix(line, " · other agents ✗36") {
		t.Fatalf("the agents beyond the cap are not shown as counted together:\n%s", line)
	}
	runtime.KeepAlive(h)
}
