package ui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/serve"
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
