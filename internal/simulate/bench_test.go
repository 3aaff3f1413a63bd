package simulate

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// BenchmarkReplay10k replays 10,000 recorded asks (four agents, bash and
// path surfaces) against a current and a candidate policy: the work behind
// every preview of the console's R dialog with a long audit log.
func BenchmarkReplay10k(b *testing.B) {
	dir := b.TempDir()
	agentDir := filepath.Join(dir, "agent")
	global := resolve.GlobalConfigPath(agentDir)
	cfg := `{"permission":{"*":"ask","bash":{"*":"ask","git *":"allow","rm *":"deny"},"path_write":{"*":"ask","/w/p/src/*":"allow"}}}`
	testkit.WriteFile(b, global, []byte(cfg))
	opts := resolve.LoadOptions{AgentDir: agentDir, Home: "/home/u"}
	cand := opts
	cand.Overlay = map[string][]byte{global: []byte(`{"permission":{"*":"ask","bash":{"*":"ask","git *":"allow","rm *":"deny","npm install *":"allow"},"path_write":{"*":"ask","/w/p/src/*":"allow"}}}`)}
	var l Log
	for i := range 10_000 {
		surface, value := "bash", fmt.Sprintf("npm install pkg%d", i)
		if i%3 == 0 {
			surface, value = "path_write", fmt.Sprintf("/w/p/src/f%d.ts", i)
		}
		agent := fmt.Sprintf("agent%d", i%4)
		l.Asks = append(l.Asks, serve.AuditRecord{Approved: i%5 != 0, DecidedBy: wire.UserDecision(),
			Facts: &serve.AuditFacts{Principal: agent, Surface: surface, MatchValues: []string{value}}})
	}
	cur, next := resolve.Load(opts), resolve.Load(cand)
	b.ResetTimer()
	for b.Loop() {
		Replay(l, cur, next)
	}
}
