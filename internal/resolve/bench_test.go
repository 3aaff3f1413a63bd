package resolve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// benchConfig writes a global config with n rules, half bash and half path,
// in the shapes people write: command prefixes, directory trees, file
// suffixes, home-relative paths.
func benchConfig(n int) string {
	var bash, path []string
	bash = append(bash, `"*":"ask"`)
	path = append(path, `"*":"ask"`)
	for i := 0; len(bash)+len(path) < n; i++ {
		switch i % 4 {
		case 0:
			bash = append(bash, fmt.Sprintf(`"git sub%d *":"allow"`, i))
			path = append(path, fmt.Sprintf(`"/home/u/proj%d/src/*":"allow"`, i))
		case 1:
			bash = append(bash, fmt.Sprintf(`"npm run task%d*":"allow"`, i))
			path = append(path, fmt.Sprintf(`"*.secret%d":"deny"`, i))
		case 2:
			bash = append(bash, fmt.Sprintf(`"docker c%d ?? *":"ask"`, i))
			path = append(path, fmt.Sprintf(`"~/dev/repo%d/*":"allow"`, i))
		case 3:
			bash = append(bash, fmt.Sprintf(`"rm -rf /tmp/x%d*":"deny"`, i))
			path = append(path, fmt.Sprintf(`"build%d/**":"allow"`, i))
		}
	}
	return `{"permission":{"bash":{` + strings.Join(bash, ",") + `},"path":{` + strings.Join(path, ",") + `}}}`
}

// benchConfigUnindexed is the index's worst case: n bash rules with no
// literal prefix or suffix ("*word*"), so every one must be tried.
func benchConfigUnindexed(n int) string {
	rules := []string{`"*":"ask"`}
	for i := 1; i < n; i++ {
		rules = append(rules, fmt.Sprintf(`"*--flag%d*":"deny"`, i))
	}
	return `{"permission":{"bash":{` + strings.Join(rules, ",") + `}}}`
}

func benchPolicy(b *testing.B, config string) *Policy {
	root := b.TempDir()
	opts := LoadOptions{AgentDir: root + "/agent", Home: "/home/u"}
	testkit.WriteFile(b, GlobalConfigPath(opts.AgentDir), []byte(config))
	p := Load(opts)
	if len(p.Problems()) > 0 {
		b.Fatal(p.Problems())
	}
	return p
}

// The queries match none of the specific rules, so the search falls all the
// way back to each surface's "*" rule: the worst case for last-match-wins.
func BenchmarkEvaluate(b *testing.B) {
	grants := []wire.Grant{{Surface: "bash", Pattern: "make *"}, {Surface: "external_directory", Pattern: "/o/p/*"}}
	for _, n := range []int{10, 100, 1000, 10000} {
		p := benchPolicy(b, benchConfig(n))
		b.Run(fmt.Sprintf("bash/rules=%d", n), func(b *testing.B) {
			q := Query{Surface: "bash", Values: []string{"git status --short"}}
			if v := p.Evaluate(q, grants); v.Action != Ask || deref(v.Pattern) != "*" {
				b.Fatalf("unexpected verdict %s %s", v.Action, deref(v.Pattern))
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Evaluate(q, grants)
			}
		})
		b.Run(fmt.Sprintf("path/rules=%d", n), func(b *testing.B) {
			q := Query{Surface: "path", Values: []string{"/home/u/work/app/src/main.go", "src/main.go"}}
			if v := p.Evaluate(q, grants); v.Action != Ask {
				b.Fatalf("unexpected verdict %s", v.Action)
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Evaluate(q, grants)
			}
		})
		worst := benchPolicy(b, benchConfigUnindexed(n))
		b.Run(fmt.Sprintf("unindexed/rules=%d", n), func(b *testing.B) {
			q := Query{Surface: "bash", Values: []string{"git status --short --branch"}}
			if v := worst.Evaluate(q, grants); v.Action != Ask || deref(v.Pattern) != "*" {
				b.Fatalf("unexpected verdict %s %s", v.Action, deref(v.Pattern))
			}
			b.ReportAllocs()
			for b.Loop() {
				worst.Evaluate(q, grants)
			}
		})
	}
}

func BenchmarkMatch(b *testing.B) {
	cases := []struct{ name, pattern, value string }{
		{"prefix", "git *", "git status --short"},
		{"suffix", "*.env.*", "/home/u/work/app/.env.local"},
		{"middle", "*/node_modules/*/package.json", "/home/u/work/app/node_modules/left-pad/package.json"},
		{"units", "a?b*c", "a😀😀b-----c"},
		{"miss", "/home/u/proj7/src/*", "/home/u/work/app/src/main.go"},
	}
	for _, c := range cases {
		p := CompilePattern(c.pattern, "/home/u")
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Match(c.value)
			}
		})
	}
}

// BenchmarkLoad is the cost of a (re)load: read, parse, compose, compile
// and index 10,000 rules.
func BenchmarkLoad(b *testing.B) {
	root := b.TempDir()
	opts := LoadOptions{AgentDir: root + "/agent", Home: "/home/u"}
	testkit.WriteFile(b, GlobalConfigPath(opts.AgentDir), []byte(benchConfig(10000)))
	b.ReportAllocs()
	for b.Loop() {
		Load(opts)
	}
}

// BenchmarkLoadHeldProject is a (re)load of 10,000 global rules and a small
// project config, trusted and with its allows held, which loads the policy
// without the project beside it (decision 0206).
func BenchmarkLoadHeldProject(b *testing.B) {
	root := b.TempDir()
	opts := LoadOptions{AgentDir: root + "/agent", ProjectDir: root + "/proj", TrustProject: true, Home: "/home/u"}
	testkit.WriteFile(b, GlobalConfigPath(opts.AgentDir), []byte(benchConfig(10000)))
	testkit.WriteFile(b, ProjectConfigPaths(opts.ProjectDir)[0], []byte(`{"permission":{"bash":{"make *":"allow"}}}`))
	for _, held := range []bool{false, true} {
		opts.HoldProjectAllows = held
		b.Run(fmt.Sprintf("held=%v", held), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Load(opts)
			}
		})
	}
}

// BenchmarkLoadAtTheCap loads a global config as large as the cap allows,
// made of the smallest rules (the most per byte): the memory bound of a
// policy file (decision 0171).
func BenchmarkLoadAtTheCap(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"permission":{"bash":{`)
	for i := 0; sb.Len() < maxPolicyFileSize-32; i++ {
		fmt.Fprintf(&sb, `"%x":"deny",`, i)
	}
	sb.WriteString(`"*":"ask"}}}`)
	root := b.TempDir()
	opts := LoadOptions{AgentDir: root + "/agent", Home: "/home/u"}
	testkit.WriteFile(b, GlobalConfigPath(opts.AgentDir), []byte(sb.String()))
	b.ReportAllocs()
	for b.Loop() {
		if p := Load(opts); len(p.Problems()) > 0 {
			b.Fatal(p.Problems())
		}
	}
}

// BenchmarkDeniesPassed is what the scope dialog's reach costs serve for
// one queued ask's suggested grant: every deny rule of the policy (a
// quarter of the bash and path rules of benchConfig) tested for a shared
// value with a path grant.
func BenchmarkDeniesPassed(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		p := benchPolicy(b, benchConfig(n))
		g := wire.Grant{Surface: "path_write", Pattern: "/home/u/work/app/src/*"}
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			if len(p.DeniesPassed(g)) == 0 {
				b.Fatal("no deny passed")
			}
			b.ReportAllocs()
			for b.Loop() {
				p.DeniesPassed(g)
			}
		})
	}
}
