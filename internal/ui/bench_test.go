package ui

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// BenchmarkKeyPress: one key press with many asks queued, as the runtime
// handles it: Update, then View of the whole 80×24 screen. The target is
// one frame (16 ms) at 10,000 queued asks.
func BenchmarkKeyPress(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			m := New(Options{Backend: &fakeBackend{}, Now: func() time.Time { return testNow }, Refresh: -1})
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
			kinds := []func() serve.Ask{pathWrite, bashChain, externalRead, legacyBash}
			for i := range n {
				a := kinds[i%len(kinds)]()
				r := *a.Request
				r.ID = fmt.Sprintf("1796233170000-q%d-48311", i)
				m.Update(EventMsg{Event: serve.AskQueued{Ask: ask(r.ID+".json", &r, a.Verdict)}})
			}
			// Half way down, so moving renders a window inside the queue.
			for range n / 2 {
				m.Update(keyMsg("j"))
			}
			keys := []tea.Msg{keyMsg("j"), keyMsg("k"), keyMsg("space"), keyMsg("space")}
			i := 0
			for b.Loop() {
				m.Update(keys[i%len(keys)])
				_ = m.View()
				i++
			}
		})
	}
}

// BenchmarkKeyPressHugeFields: one key press with 64 asks (one session's
// in-flight bound) whose agent names and values are hundreds of KiB, as a
// hostile child can send within the 1 MiB request cap.
func BenchmarkKeyPressHugeFields(b *testing.B) {
	m := New(Options{Backend: &fakeBackend{}, Now: func() time.Time { return testNow }, Refresh: -1})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	for i := range 64 {
		a := bashChain()
		r := *a.Request
		r.ID = fmt.Sprintf("1796233170000-h%d-48311", i)
		r.RequesterAgentName = strings.Repeat("\u00e9", 200<<10)
		ai := *r.AccessIntent
		ai.MatchValues = []string{strings.Repeat("x\u00e9 ", 100<<10)}
		r.AccessIntent = &ai
		m.Update(EventMsg{Event: serve.AskQueued{Ask: ask(r.ID+".json", &r, a.Verdict)}})
	}
	keys := []tea.Msg{keyMsg("j"), keyMsg("k")}
	i := 0
	for b.Loop() {
		m.Update(keys[i%len(keys)])
		_ = m.View()
		i++
	}
}

// BenchmarkLogRetention: the heap a full decision log (logCap automatic
// answers) keeps, per entry, for everyday asks and for asks whose agent,
// value, rule pattern and reason are each 1 MiB. Reported as B/entry.
func BenchmarkLogRetention(b *testing.B) {
	for _, tc := range []struct {
		name string
		ev   func(i int) serve.Decided
	}{
		{"everyday", func(i int) serve.Decided {
			a := bashChain()
			a.ID += serve.AskID(i)
			return serve.Decided{Ask: a, Auto: true, Response: wire.Response{Approved: true, State: wire.StateApproved,
				DecidedBy: &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp("git *"), Origin: sp("global")}}}
		}},
		{"1MiB-strings", func(i int) serve.Decided { return hugeDecision(i, huge(i, mib)) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perEntry float64
			for b.Loop() {
				m := New(Options{Backend: &fakeBackend{}, Now: func() time.Time { return testNow }, Refresh: -1})
				got := retained(func() {
					for i := range logCap {
						m.Update(EventMsg{Event: tc.ev(i)})
					}
				})
				runtime.KeepAlive(m)
				perEntry = float64(got) / logCap
			}
			b.ReportMetric(perEntry, "B/entry")
		})
	}
}

// BenchmarkConsoleAtTheCaps: the heap the console keeps at its caps, with
// hostile sizes: 1,024 write asks waiting whose diffs are about 1 MiB each,
// 32 asks with a 1 MiB value that expire (serve lets them go; the console
// keeps maxExpiredKept), then logCap automatic answers whose agent (each a
// new one), value, rule pattern and reason are 1 MiB each. The waiting
// asks' requests are small here, so what is measured is the console's own.
func BenchmarkConsoleAtTheCaps(b *testing.B) {
	var total float64
	for b.Loop() {
		reads := 0
		m := New(Options{Backend: &fakeBackend{}, Now: func() time.Time { return testNow }, Refresh: -1, ReadFile: bigFiles(&reads),
			Attention: io.Discard})
		got := retained(func() {
			for i := range 1024 {
				runCmd(m, EventMsg{Event: serve.AskQueued{Ask: bigFileWrite(i)}})
			}
			for i := range 32 {
				a := bigFileWrite(2000 + i)
				a.Request.Value = sp(huge(i, mib))
				runCmd(m, EventMsg{Event: serve.AskQueued{Ask: a}})
				runCmd(m, EventMsg{Event: withdrawn(a.ID, true)})
			}
			for i := range logCap {
				m.Update(EventMsg{Event: hugeDecision(i, huge(i, mib))})
			}
		})
		runtime.KeepAlive(m)
		total = float64(got)
	}
	b.ReportMetric(total/mib, "MiB-kept")
}

// runCmd applies msg and runs what it returns to completion, feeding back
// the previews, as the runtime would.
func runCmd(m *Model, msg tea.Msg) {
	_, cmd := m.Update(msg)
	for cmds := []tea.Cmd{cmd}; len(cmds) > 0; {
		c := cmds[0]
		cmds = cmds[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			cmds = append(cmds, msg...)
		case previewMsg:
			_, next := m.Update(msg)
			cmds = append(cmds, next)
		}
	}
}

// BenchmarkApprovalStamps: what an approval of 1,024 selected edits adds
// before its decisions go out (decision 0187): a stat of each ask's file,
// in the command, and the comparison in Update. The files are real.
func BenchmarkApprovalStamps(b *testing.B) {
	dir := b.TempDir()
	m := New(Options{Backend: &fakeBackend{}, Now: func() time.Time { return testNow }, Refresh: -1, Attention: io.Discard})
	ids := make([]serve.AskID, 0, 1024)
	for i := range 1024 {
		a := editAsk()
		a.ID += serve.AskID(100 + i)
		path := fmt.Sprintf("%s/f%d.ts", dir, i)
		if err := os.WriteFile(path, []byte(appSource), 0o600); err != nil {
			b.Fatal(err)
		}
		r := *a.Request
		ai := *r.AccessIntent
		ai.BoundaryValue, r.AccessIntent = &path, &ai
		a.Request = &r
		runCmd(m, EventMsg{Event: serve.AskQueued{Ask: a}})
		ids = append(ids, a.ID)
	}
	if e := m.find(ids[1023]); e.diffState != diffKept {
		b.Fatalf("the last diff is not kept (state %d)", e.diffState)
	}
	for b.Loop() {
		m.Update(m.stampsCmd(ids, nil)())
	}
	if e := m.find(ids[0]); e.diffStale || e.diffState != diffKept {
		b.Fatal("an unchanged file was taken as changed")
	}
}
