package resolve

import (
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

// A load that holds an untrusted project's allows (decision 0206) judges
// its policy without the project from the same bytes it read: each file is
// opened once, so the two policies cannot be of two versions of a file
// changed between two reads (review finding).
func TestAHeldProjectLoadReadsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	opts := LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true, HoldProjectAllows: true}
	global, agent := GlobalConfigPath(dir), filepath.Join(dir, "agents", "builder.md")
	testkit.WriteFile(t, global, []byte(`{"permission":{"bash":{"*":"ask"}}}`))
	testkit.WriteFile(t, agent, []byte("---\npermission:\n  bash:\n    make *: allow\n---\n"))
	testkit.WriteFile(t, ProjectConfigPaths(opts.ProjectDir)[0], []byte(`{"permission":{"bash":{"curl *":"allow"}}}`))
	opens := testkit.Opens(t, global, agent)
	p := Load(opts)
	if p.WithoutProject() == nil {
		t.Fatal("no policy without the project was kept")
	}
	if got := opens(); got[global] != 1 || got[agent] != 1 {
		t.Fatalf("opens %v, want each file once", got)
	}
}
