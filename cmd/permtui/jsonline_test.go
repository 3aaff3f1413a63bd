package main

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

// TestJSONLinesLeaveNoStackPointerBehind: a --json line's value is encoded
// from the caller's stack, yet the encoder's pooled map iterator kept
// pointing at it. Once the goroutine ended and its grown stack went back to
// the heap, the next collection found that pointer and the process died
// with "found bad pointer in Go heap" (seen once under go test -count=5;
// decision 0251). The goroutine grows its stack so it is freed on exit, as
// a serving goroutine's deep stack is; the collections then scan the pool.
func TestJSONLinesLeaveNoStackPointerBehind(t *testing.T) {
	e := newRuleEnv(t, `{"permission":{"*":"ask"}}`)
	cfg := filepath.Join(t.TempDir(), "bad.json")
	testkit.WriteFile(t, cfg, []byte(`{"permission":{"bash":"maybe"}}`))
	for range 20 {
		out := make(chan string)
		go func() {
			out <- onGrownStack(64, [1024]byte{}, func() string {
				_, stdout, _ := runCmd(t, "", e.args("simulate", "--config", cfg, "--json")...)
				return stdout
			})
		}()
		if got := <-out; !strings.Contains(got, `"candidateProblems"`) {
			t.Fatalf("simulate --json wrote %q", got)
		}
		runtime.GC()
		runtime.GC()
	}
}

// onGrownStack runs f below depth frames that each carry 1 KiB, so f runs on
// a stack larger than a new goroutine's, which is freed when it ends.
func onGrownStack(depth int, frame [1024]byte, f func() string) string {
	if depth == 0 {
		return f()
	}
	frame[depth%len(frame)]++
	return onGrownStack(depth-1, frame, f)
}
