package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/demo"
	"github.com/permtui/permtui/internal/resolve"
)

// BenchmarkResolveBatch is 'permtui resolve --batch' without the process: one
// op judges 100,000 JSON lines (bash, bare and directional path, floored
// chains) against the demo's policy and writes the verdict lines.
func BenchmarkResolveBatch(b *testing.B) {
	env, err := demo.Setup(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	policy := resolve.Load(resolve.LoadOptions{AgentDir: env.AgentDir, ProjectDir: env.Project, TrustProject: true, Home: env.Root})
	var in bytes.Buffer
	const lines = 100_000
	for i := 0; i < lines; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&in, `{"agent":"researcher","surface":"bash","values":["git log --oneline %d"]}`+"\n", i)
		case 1:
			fmt.Fprintf(&in, `{"agent":"implementer","surface":"path","values":[%q,%q]}`+"\n",
				filepath.Join(env.Worktrees[0], "src", fmt.Sprint(i)), fmt.Sprintf("src/%d", i))
		case 2:
			fmt.Fprintf(&in, `{"agent":"","surface":"path_write","values":["/w/p/.env.%d"]}`+"\n", i)
		default:
			in.WriteString(`{"agent":"implementer","surface":"bash","values":["pnpm build"],"askingUnits":[{"command":"pnpm build"},{"command":"sh -c x","floor":"<indirection-bash-wrapper>"}]}` + "\n")
		}
	}
	b.SetBytes(int64(in.Len()))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := resolveBatch(policy, sessionRules{}, bytes.NewReader(in.Bytes()), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/line")
}
