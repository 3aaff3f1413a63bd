package policyedit

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
)

// env is a throw-away agent dir and project with the given files.
type env struct {
	opts  resolve.LoadOptions
	state string
}

func newEnv(t testing.TB, files map[string]string) env {
	t.Helper()
	root := t.TempDir()
	e := env{
		opts: resolve.LoadOptions{
			AgentDir: filepath.Join(root, "agent"), ProjectDir: filepath.Join(root, "proj"),
			TrustProject: true, Home: "/home/u",
		},
		state: filepath.Join(root, "state"),
	}
	for name, text := range files {
		testkit.WriteFile(t, e.path(name), []byte(text))
	}
	return e
}

// path maps the short names the tests use to pi's file layout.
func (e env) path(name string) string {
	switch {
	case name == "global":
		return resolve.GlobalConfigPath(e.opts.AgentDir)
	case name == "project":
		return resolve.ProjectConfigPaths(e.opts.ProjectDir)[0]
	case name == "project.local":
		return resolve.ProjectConfigPaths(e.opts.ProjectDir)[1]
	case strings.HasPrefix(name, "agents/"):
		return filepath.Join(e.opts.AgentDir, name)
	case strings.HasPrefix(name, "project-agents/"):
		return filepath.Join(e.opts.ProjectDir, ".pi", "agents", strings.TrimPrefix(name, "project-agents/"))
	}
	panic(name)
}

func (e env) plan(t *testing.T, scope Scope, agent string, r Rule, values ...string) (*Change, error) {
	t.Helper()
	target, err := Locate(e.opts, scope, agent, r.Action)
	if err != nil {
		t.Fatal(err)
	}
	return Plan(e.opts, target, r, resolve.Query{Agent: agent, Surface: r.Surface, Values: values})
}

// TestPlacementUnderPiOrdering: the rule is placed where it decides, or the
// plan is refused with the rule that decides instead.
func TestPlacementUnderPiOrdering(t *testing.T) {
	allow := func(s, p string) Rule { return Rule{Surface: s, Pattern: p, Action: resolve.Allow} }
	cases := []struct {
		name   string
		files  map[string]string
		scope  Scope
		agent  string
		rule   Rule
		values []string
		refuse string // "" = placed and deciding
	}{
		{name: "a later pattern is passed by going last",
			files: map[string]string{"global": `{"permission":{"bash":{"npm install *":"deny","*":"ask"}}}`},
			scope: ScopeGlobal, rule: allow("bash", "npm install *"), values: []string{"npm install x"}},
		{name: "integer-like pattern sorts first and loses",
			files: map[string]string{"global": `{"permission":{"skill":{"*":"deny"}}}`},
			scope: ScopeGlobal, rule: allow("skill", "7"), values: []string{"7"}, refuse: `skill "*"`},
		{name: "a later wildcard surface key decides",
			files: map[string]string{"global": `{"permission":{"bash":{"*":"ask"},"?ash":"deny"}}`},
			scope: ScopeGlobal, rule: allow("bash", "ls"), values: []string{"ls"}, refuse: "?ash"},
		{name: "a higher scope's string replaces the global map",
			files: map[string]string{"global": `{"permission":{}}`, "project": `{"permission":{"bash":"deny"}}`},
			scope: ScopeGlobal, rule: allow("bash", "ls"), values: []string{"ls"}, refuse: "project config"},
		{name: "config.local.json overrides config.json",
			files: map[string]string{"project.local": `{"permission":{"bash":{"*":"deny"}}}`},
			scope: ScopeProject, rule: allow("bash", "ls"), values: []string{"ls"}, refuse: "config.local.json"},
		{name: "agent scope goes to the project agent file",
			files: map[string]string{"agents/a.md": "---\nname: a\n---\n", "project-agents/a.md": "---\nname: a\npermission:\n  bash: deny\n---\n"},
			scope: ScopeAgent, agent: "a", rule: allow("bash", "ls"), values: []string{"ls"}},
		{name: "the fail-closed floor holds allows at ask",
			files: map[string]string{"project": `{"permision":{}}`},
			scope: ScopeGlobal, rule: allow("bash", "ls"), values: []string{"ls"}, refuse: "fail-closed floor"},
		{name: "a bare family rule decides through its members",
			scope: ScopeGlobal, rule: allow("path", "/w/p/*"), values: []string{"/w/p/a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.files)
			ch, err := e.plan(t, c.scope, c.agent, c.rule, c.values...)
			if c.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), c.refuse) {
					t.Fatalf("err = %v, want a refusal naming %q", err, c.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if after := ch.Edited.Evaluate(ch.Facts, nil); after.Action != c.rule.Action || after.Rule.Pattern != c.rule.Pattern {
				t.Errorf("after: %+v", after)
			}
		})
	}
}

func TestLocate(t *testing.T) {
	e := newEnv(t, map[string]string{"agents/a.md": "---\n---\n"})
	if _, err := Locate(e.opts, ScopeAgent, "nobody", resolve.Deny); err == nil || !strings.Contains(err.Error(), "does not create agents") {
		t.Errorf("missing agent: %v", err)
	}
	for _, bad := range []string{"", "..", "a/b", "x\x1b"} {
		if _, err := Locate(e.opts, ScopeAgent, bad, resolve.Deny); err == nil {
			t.Errorf("agent %q located", bad)
		}
	}
	tg, err := Locate(e.opts, ScopeAgent, "a", resolve.Allow)
	if err != nil || tg.Origin != resolve.OriginAgent || tg.File != e.path("agents/a.md") {
		t.Errorf("agent a: %+v %v", tg, err)
	}
	untrusted := e.opts
	untrusted.TrustProject = false
	if _, err := Locate(untrusted, ScopeProject, "", resolve.Deny); err == nil {
		t.Error("project scope located for an untrusted project")
	}
}

// TestLoosensHigherDeny: pi's slot-keeping merge lets a global rule beat a
// project deny; the change says so.
func TestLoosensHigherDeny(t *testing.T) {
	e := newEnv(t, map[string]string{
		"global":  `{"permission":{"bash":{"*":"ask"}}}`,
		"project": `{"permission":{"bash":{"*":"deny"}}}`,
	})
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
	if err != nil {
		t.Fatal(err)
	}
	if g := Group(ch.Loosens); len(g) != 1 || g[0].First.Before.Rule.Origin != resolve.OriginProject {
		t.Fatalf("Loosens = %+v, want the project deny", ch.Loosens)
	}
}

// TestLoosensDenyBesideTheFacts: the facts the person saw ("rm foo") were
// not denied, but the new global "rm *" lands after the slot that a global
// key keeps for a project (or agent) deny of "rm -rf /", so it overrides
// that deny too; the change must name it, so the counted confirmation asks.
func TestLoosensDenyBesideTheFacts(t *testing.T) {
	e := newEnv(t, map[string]string{
		"global":        `{"permission":{"bash":{"*":"ask","rm -rf /":"ask","rm -rf ~":"ask"}}}`,
		"project":       `{"permission":{"bash":{"rm -rf /":"deny"}}}`,
		"agents/ops.md": "---\nname: ops\npermission:\n  bash:\n    \"rm -rf ~\": deny\n---\n",
	})
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "rm *", Action: resolve.Allow}, "rm foo")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range Group(ch.Loosens) {
		got = append(got, g.First.Before.Rule.Origin+" "+g.First.Before.Rule.Pattern)
	}
	if want := []string{"project rm -rf /", "agent rm -rf ~"}; !slices.Equal(got, want) {
		t.Fatalf("Loosens = %q, want %q", got, want)
	}
	if r := Safety(ch, 0, 0); r == nil || r.Count != 2 {
		t.Fatalf("Safety = %+v, want a counted confirmation of 2", r)
	}
}

// TestLoosensDenyInTheSameFile: last match wins, so an allow placed last
// takes the say from a deny written earlier in the same map, which the
// person did not ask about: that also needs the counted confirmation.
func TestLoosensDenyInTheSameFile(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"permission":{"bash":{"*":"ask","rm -rf /":"deny","rmdir x":"deny"}}}`})
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "rm *", Action: resolve.Allow}, "rm foo")
	if err != nil {
		t.Fatal(err)
	}
	if g := Group(ch.Loosens); len(g) != 1 || g[0].First.Before.Rule.Pattern != "rm -rf /" {
		t.Fatalf("Loosens = %+v, want the global deny of rm -rf /", ch.Loosens)
	}
	if r := Safety(ch, 0, 0); r == nil || !strings.Contains(r.Reasons[0], `"rm -rf /"`) || strings.Contains(r.Reasons[0], "ranks above") {
		t.Fatalf("Safety = %+v", r)
	}
}

func TestApplyWritesKeepsModeAndBacksUp(t *testing.T) {
	orig := "{\n  // mine\n  \"permission\": {\"bash\": {\"*\": \"ask\"}}\n}\n"
	e := newEnv(t, map[string]string{"global": orig})
	file := e.path("global")
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Apply(ch, e.opts, e.state, time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	if string(got) != string(ch.New) {
		t.Errorf("file:\n%s", got)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(w.Backup); string(b) != orig {
		t.Errorf("backup %s holds %q", w.Backup, b)
	}
	if fi, _ := os.Stat(w.Backup); fi.Mode().Perm() != 0o600 || filepath.Dir(w.Backup) != filepath.Join(e.state, "backups") {
		t.Errorf("backup %s mode %v", w.Backup, fi.Mode().Perm())
	}
	if v := resolve.Load(e.opts).Evaluate(resolve.Query{Surface: "bash", Values: []string{"ls"}}, nil); v.Action != resolve.Allow {
		t.Errorf("after write: %+v", v)
	}
	// The same change again: the file moved on, nothing is written.
	if _, err := Apply(ch, e.opts, e.state, time.Now()); err == nil || !strings.Contains(err.Error(), "changed since the preview") {
		t.Errorf("stale apply: %v", err)
	}
}

func TestApplyThroughALink(t *testing.T) {
	e := newEnv(t, nil)
	real := filepath.Join(t.TempDir(), "dotfiles-config.json")
	testkit.WriteFile(t, real, []byte(`{"permission":{}}`))
	linkGlobal(t, e, real)
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ch, e.opts, e.state, time.Now()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(e.path("global")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(real); string(got) != string(ch.New) {
		t.Errorf("link target: %s", got)
	}
}

// A link repointed between the preview and the write, to a file with the
// same text, is refused: the write goes only to the file the preview
// checked, never to one no check saw.
func TestApplyRefusesALinkRepointedSinceThePreview(t *testing.T) {
	e := newEnv(t, nil)
	dir := t.TempDir()
	checked, other := filepath.Join(dir, "checked.json"), filepath.Join(dir, "other.json")
	for _, f := range []string{checked, other} {
		testkit.WriteFile(t, f, []byte(`{"permission":{}}`))
	}
	linkGlobal(t, e, checked)
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.path("global")); err != nil {
		t.Fatal(err)
	}
	linkGlobal(t, e, other)
	if _, err := Apply(ch, e.opts, e.state, time.Now()); err == nil || !strings.Contains(err.Error(), "since the preview") {
		t.Fatalf("Apply through a repointed link = %v", err)
	}
	for _, f := range []string{checked, other} {
		if got, _ := os.ReadFile(f); string(got) != `{"permission":{}}` {
			t.Errorf("%s written: %s", f, got)
		}
	}
}

// TestApplyRestoresWhenTheRuleDoesNotDecide: a change whose rule turns out
// not to decide its facts once on disk is put back, and Apply says why.
func TestApplyRestoresWhenTheRuleDoesNotDecide(t *testing.T) {
	for _, existed := range []bool{true, false} {
		files := map[string]string{}
		if existed {
			files["global"] = `{"permission":{"bash":"ask"}}`
		}
		e := newEnv(t, files)
		ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
		if err != nil {
			t.Fatal(err)
		}
		ch.Facts.Values = []string{"rm -rf /"} // facts the rule does not cover
		_, err = Apply(ch, e.opts, e.state, time.Now())
		if err == nil || !strings.Contains(err.Error(), "put back") {
			t.Fatalf("existed=%v: err = %v", existed, err)
		}
		got, rerr := os.ReadFile(e.path("global"))
		if existed && string(got) != files["global"] {
			t.Errorf("not restored: %q", got)
		}
		if !existed && !os.IsNotExist(rerr) {
			t.Errorf("created file left behind: %q %v", got, rerr)
		}
	}
}

// TestFlooredFactsCannotBeDecidedByAnAllow: a child's floor keeps an allow
// at ask, so a rule written for those facts would not answer them.
func TestFlooredFactsCannotBeDecidedByAnAllow(t *testing.T) {
	e := newEnv(t, nil)
	target, err := Locate(e.opts, ScopeGlobal, "", resolve.Allow)
	if err != nil {
		t.Fatal(err)
	}
	floor := "<indirection-bash-wrapper>"
	facts := resolve.Query{Surface: "bash", Values: []string{"eval x"}, Floor: &floor}
	_, err = Plan(e.opts, target, Rule{Surface: "bash", Pattern: "eval *", Action: resolve.Allow}, facts)
	if err == nil || !strings.Contains(err.Error(), "would still be ask") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Plan(e.opts, target, Rule{Surface: "bash", Pattern: "eval *", Action: resolve.Deny}, facts); err != nil {
		t.Errorf("a deny decides floored facts: %v", err)
	}
}

// TestReadOnlyPolicyIsNotEdited: a person who made a policy file read-only
// said not to change it; renaming a new file over it would (and does, even
// as its owner), so the plan is refused.
func TestReadOnlyPolicyIsNotEdited(t *testing.T) {
	orig := `{"permission":{"bash":{"*":"ask"}}}`
	e := newEnv(t, map[string]string{"global": orig})
	if err := os.Chmod(e.path("global"), 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("err = %v", err)
	}
}

// TestAlreadyRejectedPolicySaysSo: a file pi rejects as it is gets a
// refusal that says the edit is not to blame.
func TestAlreadyRejectedPolicySaysSo(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"permission":{"bash":{"*":"ask",},}}`})
	_, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
	if err == nil || !strings.Contains(err.Error(), "already rejects") || !strings.Contains(err.Error(), "fix it first") {
		t.Fatalf("err = %v", err)
	}
}

// TestDanglingLinkIsNotReplaced: a policy path that is a link to a missing
// file (a dotfile manager's link before its target exists) is left alone:
// the rename would replace the link with a plain file.
func TestDanglingLinkIsNotReplaced(t *testing.T) {
	e := newEnv(t, nil)
	file := e.path("global")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "missing.json"), file); err != nil {
		t.Fatal(err)
	}
	_, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}, "ls")
	if err == nil || !strings.Contains(err.Error(), "link") {
		t.Fatalf("err = %v", err)
	}
	if fi, err := os.Lstat(file); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
}

// TestLockRefusesNamingTheHolder: a second writer of the same policy file
// waits for the first, then refuses naming it; none is left once released.
func TestLockRefusesNamingTheHolder(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{}`})
	target, err := Locate(e.opts, ScopeGlobal, "", resolve.Deny)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(target, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(target, 0)
	if err == nil || !strings.Contains(err.Error(), "locked by process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second writer: %v", err)
	}
	unlock()
	again, err := Lock(target, 0)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// TestProjectLinkOutsideTheProjectIsRefused (issue 18, case 9): a project
// config the repository brings as a link to the global config (or a .pi
// directory linked out of the project) would send a project rule into
// another file; it is refused naming the target. A link inside the project
// is followed, and the change names the file really written.
func TestProjectLinkOutsideTheProjectIsRefused(t *testing.T) {
	rule := Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow}
	e := newEnv(t, map[string]string{"global": `{"permission":{}}`})
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link(e.path("global"), e.path("project"))
	if _, err := e.plan(t, ScopeProject, "", rule, "ls"); err == nil || !strings.Contains(err.Error(), "is really "+e.path("global")) {
		t.Fatalf("a link to the global config: %v", err)
	}

	e = newEnv(t, map[string]string{"global": `{"permission":{}}`})
	outside := t.TempDir()
	link(outside, filepath.Join(e.opts.ProjectDir, ".pi"))
	if _, err := e.plan(t, ScopeProject, "", rule, "ls"); err == nil || !strings.Contains(err.Error(), "outside the project") {
		t.Fatalf("a .pi linked out of the project (no config yet): %v", err)
	}

	e = newEnv(t, map[string]string{"global": `{"permission":{}}`})
	inside := filepath.Join(e.opts.ProjectDir, "policy", "pi.json")
	testkit.WriteFile(t, inside, []byte(`{"permission":{}}`))
	link(inside, e.path("project"))
	ch, err := e.plan(t, ScopeProject, "", rule, "ls")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(ch.Real, filepath.Join("policy", "pi.json")) || !strings.Contains(ch.Diff(), "pi.json") {
		t.Fatalf("Real = %q, diff:\n%s", ch.Real, ch.Diff())
	}
}

// TestABrokenFileElsewhereRefusesTheEdit: while any policy file is broken,
// serve holds every allow at ask, so the authority diff could not see the
// allows a rule opens (here: the global state string spelled out, which the
// project map then merges with); the edit waits until the file is fixed.
func TestABrokenFileElsewhereRefusesTheEdit(t *testing.T) {
	e := newEnv(t, map[string]string{
		"global":        `{"permission":{"bash":"allow"}}`,
		"project":       `{"permission":{"bash":{"git status":"allow"}}}`,
		"project.local": `{"permission":`,
	})
	_, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "rm -rf *", Action: resolve.Deny}, "rm -rf /x")
	if err == nil || !strings.Contains(err.Error(), e.path("project.local")) || !strings.Contains(err.Error(), "fix it first") {
		t.Fatalf("err = %v", err)
	}
}

// TestTheCountCoversEveryWarning: a "*" allow that passes three denies, with
// no recorded ask it would have decided, still needs a count that names the
// three loosenings; a later warning kind does not replace an earlier one's.
func TestTheCountCoversEveryWarning(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"permission":{"bash":{"*":"ask","rm *":"deny","git *":"deny","cat *":"deny"}}}`})
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "*", Action: resolve.Allow}, "ls")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Group(ch.Loosens)); n != 3 {
		t.Fatalf("Loosens = %v, want the three denies passed", Group(ch.Loosens))
	}
	for _, c := range []struct{ covered, denied, want int }{{0, 0, 3}, {5, 0, 8}, {5, 2, 10}} {
		if r := Safety(ch, c.covered, c.denied); r == nil || r.Count != c.want || len(r.Reasons) < 3 {
			t.Errorf("Safety(covered %d, denied %d) = %+v, want a count of %d", c.covered, c.denied, r, c.want)
		}
	}
}

// linkGlobal makes the global config a link to target, as dotfile managers
// keep it.
func linkGlobal(t *testing.T, e env, target string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(e.path("global")), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, e.path("global")); err != nil {
		t.Fatal(err)
	}
}

// A pattern wider than it reads ("?*": every command but the empty one)
// loosens nothing the policy's own rules name where everything asks, yet
// allows "rm -rf /": it needs the counted confirmation too, naming that
// (third adversarial pass, finding 4); a narrow pattern does not.
func TestAPatternWiderThanItReadsNeedsTheConfirmation(t *testing.T) {
	e := newEnv(t, map[string]string{"global": `{"permission":{"*":"ask"}}`})
	ch, err := e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "?*", Action: resolve.Allow}, "npm test")
	if err != nil {
		t.Fatal(err)
	}
	if r := Safety(ch, 0, 0); r == nil || r.Count != 1 || !strings.Contains(r.Reasons[0], `also allows "rm -rf /" (bash)`) {
		t.Fatalf("Safety = %+v", r)
	}
	ch, err = e.plan(t, ScopeGlobal, "", Rule{Surface: "bash", Pattern: "npm run *", Action: resolve.Allow}, "npm run build")
	if err != nil {
		t.Fatal(err)
	}
	if r := Safety(ch, 0, 0); r != nil {
		t.Fatalf("a narrow pattern: Safety = %+v", r)
	}
}

// Two backups of one file within a millisecond keep both versions: the
// second gets a numbered name, and neither replaces the other.
func TestBackupsWithinAMillisecondAreNumbered(t *testing.T) {
	state := t.TempDir()
	target := Target{Scope: ScopeAgent, Agent: "builder", File: "/agent/agents/builder.md"}
	now := time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC)
	first, err := backup(state, target, []byte("one"), now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := backup(state, target, []byte("two"), now)
	if err != nil {
		t.Fatal(err)
	}
	if second != first+".2" {
		t.Fatalf("second backup %s, want %s.2", second, first)
	}
	for file, want := range map[string]string{first: "one", second: "two"} {
		data, err := os.ReadFile(file)
		fi, serr := os.Stat(file)
		if err != nil || serr != nil || string(data) != want || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %q %v %v, want %q mode 600", file, data, err, serr, want)
		}
	}
}
