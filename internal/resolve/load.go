package resolve

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/permtui/permtui/internal/safefs"
)

// maxPolicyFileSize bounds the memory a policy file can take. pi reads any
// size, so the bound sits far above any written policy; a larger file is a
// problem, and serve holds every allow while it lasts (decision 0171).
const maxPolicyFileSize = 4 << 20

// maxComposedRules bounds the rules compiled for all rulesets of a policy
// together, about 0.9 KB each (decision 0171).
const maxComposedRules = 500_000

// LoadOptions says where the root session's policy lives.
type LoadOptions struct {
	AgentDir     string // pi agent dir (global config + <AgentDir>/agents/*.md)
	ProjectDir   string // the ROOT session's cwd; "" = no project scope
	TrustProject bool   // false = leave project and project-agent scopes out (pi's untrusted project)
	// HoldProjectAllows: the project's files are read (TrustProject) but
	// the person has not said the project is trusted, so an allow that
	// holds only because of them goes to a person (decision 0206).
	HoldProjectAllows bool
	// ProjectNamed: a person named ProjectDir as the cwd of the root
	// sessions served, so it is theirs, not a guess, and an ask from outside
	// it (a child in another worktree) is judged by it alone, as pi's root
	// there judges it; else such an ask's allow goes to a person (decision 0234).
	ProjectNamed bool
	Home         string // drives ~, $HOME, ${HOME} expansion in patterns
	// Overlay holds file contents that stand in for what is on disk, keyed
	// by path: a candidate edit judged before it is written. nil = the disk.
	Overlay map[string][]byte
}

// Problem is a policy file that could not be used.
type Problem struct {
	File    string
	Message string
	// FailClosed: this invalid non-global scope floors allow → ask.
	FailClosed bool
	// Unheld: pi reads this policy but it is over what permtui holds (a file
	// over maxPolicyFileSize, rules over maxComposedRules), so a deny pi
	// applies may be missing here; every ask is then denied (decision 0177):
	// the asks of Agent when it is an agent's file, else all of them.
	Unheld bool
	Agent  string
	cause  string // Message without its consequence, for explanations
}

// Policy is an immutable, fully compiled snapshot of the root's policy: one
// ruleset per agent file name plus the agent-less one. Evaluation does no IO.
type Policy struct {
	opts LoadOptions
	// bytesRead, while a load that holds the project's allows runs, keeps
	// what each file read held, so the policy without the project is made
	// from the same bytes (its overlay), not from a second read.
	bytesRead map[string][]byte
	problems  []Problem
	base      *ruleset
	agents    map[string]*ruleset
	// unlisted serves agent names without a file when an agents directory
	// could not be listed: we cannot know their files, so it is floored.
	unlisted *ruleset
	yolo     bool
	yoloFrom string
	// foldsCase: an agents directory is on a file system that finds a name
	// in any case (macOS's default), so pi, which opens agents/<name>.md by
	// path, reads an agent's file for a name differing only by case.
	foldsCase bool
	watch     []string
	read      []string // the policy files that were read, in load order
	project   []string // those of them that are the project's
	// projectRoots are the project dir as named and with its links
	// resolved, absolute: a requester's cwd under neither is outside it.
	projectRoots []string
	// located is what Locate found for a cwd strictly under the project
	// (cleaned cwd → the dir under the project, nearer the cwd, that holds a
	// .pi, or outsideReal), for OutsideProject, which does no IO; at most
	// maxLocated entries, cleared when full (decision 0257).
	located  sync.Map
	nLocated atomic.Int32
	// outside is the policy without the project's files, while their
	// allows are held (HoldProjectAllows).
	outside *Policy
	// grantPatterns caches compiled session-grant patterns (text → *Pattern):
	// grants arrive with each evaluation but change rarely.
	grantPatterns sync.Map
}

// grantPattern returns the compiled form of a grant's surface or pattern.
func (p *Policy) grantPattern(text string) *Pattern {
	if c, ok := p.grantPatterns.Load(text); ok {
		return c.(*Pattern)
	}
	actual, _ := p.grantPatterns.LoadOrStore(text, new(CompilePattern(text, p.opts.Home)))
	return actual.(*Pattern)
}

// Options returns the options the policy was loaded with.
func (p *Policy) Options() LoadOptions { return p.opts }

// Problems lists the files that could not be used, in load order.
func (p *Policy) Problems() []Problem { return slices.Clone(p.problems) }

// Files lists the policy files that were read (valid or not), in load order;
// none means the policy is pi's built-in default.
func (p *Policy) Files() []string { return slices.Clone(p.read) }

// ProjectFiles lists the project's policy files that were read (valid or
// not), in load order; none means no project policy is in force.
func (p *Policy) ProjectFiles() []string { return slices.Clone(p.project) }

// WithoutProject is the policy without the project's files when some were
// read and their allows are held (LoadOptions.HoldProjectAllows), else nil:
// an allow of p that this policy does not give holds only because of the
// project (decision 0206).
func (p *Policy) WithoutProject() *Policy { return p.outside }

// OutsideProject is the project dir p was loaded for when cwd, a
// requester's working directory, may have a root session of another
// project: it is not the project dir nor under it (as given, or with its
// links resolved by Locate), or Locate found a nearer dir under the project
// that holds a .pi, which is own. "" when cwd is inside, when p has no
// project or a named one (LoadOptions.ProjectNamed), or when cwd is ""
// (facts judged without a request). A relative cwd is outside: pi's
// children name an absolute one. A cwd under the project that Locate has
// not seen is outside too (decision 0257). It does no IO.
func (p *Policy) OutsideProject(cwd string) (project, own string) {
	if len(p.projectRoots) == 0 || p.opts.ProjectNamed || cwd == "" {
		return "", ""
	}
	if !filepath.IsAbs(cwd) {
		return p.opts.ProjectDir, ""
	}
	cwd = filepath.Clean(cwd)
	if slices.Contains(p.projectRoots, cwd) {
		return "", ""
	}
	if !p.underProject(cwd) {
		return p.opts.ProjectDir, ""
	}
	found, ok := p.located.Load(cwd)
	switch {
	case !ok || found.(string) == outsideReal:
		return p.opts.ProjectDir, ""
	case found.(string) != "":
		return p.opts.ProjectDir, found.(string)
	}
	return "", ""
}

// underProject: path (absolute, clean) is a project root or under one.
func (p *Policy) underProject(path string) bool {
	return slices.ContainsFunc(p.projectRoots, func(root string) bool { return safefs.Within(path, root) })
}

// outsideReal marks a located cwd whose real path leaves the project, or
// that could not be resolved.
const outsideReal = "\x00outside"

// maxLocated bounds located: cwds come from untrusted requests.
const maxLocated = 4096

// maxLocateDepth bounds Locate's walk; a deeper cwd counts as outside.
const maxLocateDepth = 64

// Locate finds, by IO, where cwd lies against the guessed project for
// OutsideProject: its real path (links resolved) must stay under the
// project, and no dir between it and the project may hold a .pi, where pi
// reads a project's files (config.json, config.local.json, agents/,
// agent/pi-permissions.jsonc), so a root session there judges by them
// (decision 0257). serve and 'permtui resolve' call it before judging a
// request; it does nothing where OutsideProject needs no IO.
func (p *Policy) Locate(cwd string) {
	if len(p.projectRoots) == 0 || p.opts.ProjectNamed || !filepath.IsAbs(cwd) {
		return
	}
	cwd = filepath.Clean(cwd)
	if slices.Contains(p.projectRoots, cwd) || !p.underProject(cwd) {
		return
	}
	found := nestedProject(cwd, p.projectRoots[len(p.projectRoots)-1])
	// Cleared only by many distinct cwds; an ask whose entry a clear took
	// between here and its verdict is held, never allowed.
	if _, had := p.located.Load(cwd); !had && p.nLocated.Add(1) > maxLocated {
		p.located.Clear()
		p.nLocated.Store(1)
	}
	p.located.Store(cwd, found)
}

// nestedProject is the dir nearest cwd, below the real project root, that
// holds a .pi (anything named so, or one that cannot be told absent), ""
// for none, or outsideReal.
func nestedProject(cwd, realRoot string) string {
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return outsideReal
	}
	for range maxLocateDepth {
		switch {
		case real == realRoot:
			return ""
		case !safefs.Within(real, realRoot):
			return outsideReal
		}
		if _, err := os.Lstat(filepath.Join(real, ".pi")); !errors.Is(err, fs.ErrNotExist) {
			return real
		}
		real = filepath.Dir(real)
	}
	return outsideReal
}

// projectRoots is dir made absolute, and with its links resolved when that
// differs; none for no project.
func projectRoots(dir string) []string {
	if dir == "" {
		return nil
	}
	abs, real := safefs.RealPath(dir)
	if real != abs {
		return []string{abs, real}
	}
	return []string{abs}
}

// WatchPaths lists the files and directories whose change should trigger a
// reload (they need not exist).
func (p *Policy) WatchPaths() []string { return slices.Clone(p.watch) }

// Agents lists the agent names that have an agent file, sorted.
func (p *Policy) Agents() []string { return slices.Sorted(maps.Keys(p.agents)) }

// Rules lists the rules that judge agent's asks ("" = no agent scope) as
// written, lowest priority first: for a policy editor that must know which
// denies a new rule would pass.
func (p *Policy) Rules(agent string) []RuleRef {
	rs := p.rulesetFor(agent)
	out := make([]RuleRef, len(rs.rules))
	for i := range rs.rules {
		out[i] = rs.rules[i].ref // its Index is i (indexRules)
	}
	return out
}

func (p *Policy) rulesetFor(agent string) *ruleset {
	if agent == "" {
		return p.base
	}
	if rs, ok := p.agents[agent]; ok {
		return rs
	}
	if name := p.foldedAgent(agent); name != "" {
		return p.agents[name]
	}
	if p.unlisted != nil {
		return p.unlisted
	}
	return p.base
}

// readFile reads a policy file through the options, keeping its bytes
// while bytesRead is on.
func (p *Policy) readFile(file string) ([]byte, error) {
	data, err := p.opts.ReadFile(file)
	if err == nil && p.bytesRead != nil {
		p.bytesRead[file] = data
	}
	return data, err
}

// ReadFile returns a policy file's contents as Load reads them: from the
// overlay when it has them, else from the disk, a link followed, at most
// maxPolicyFileSize.
func (o LoadOptions) ReadFile(file string) ([]byte, error) {
	if data, ok := o.Overlay[file]; ok {
		return data, nil
	}
	return safefs.ReadRegularFileFollow(file, maxPolicyFileSize)
}

// Paths of pi-permission-system's policy files: the global config, the
// project's config.json then config.local.json, and the agent directories.
func GlobalConfigPath(agentDir string) string {
	return filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json")
}

func ProjectConfigPaths(projectDir string) []string {
	dir := filepath.Join(projectDir, ".pi", "extensions", "pi-permission-system")
	return []string{filepath.Join(dir, "config.json"), filepath.Join(dir, "config.local.json")}
}

// LegacyProjectPath is the project's legacy policy file. pi merges its
// runtime settings between the global and the project config.json; permtui
// takes only a false yoloMode from it (decision 0170). The legacy global
// file sits below the global config, so under that rule it changes nothing
// and is not read.
func LegacyProjectPath(projectDir string) string {
	return filepath.Join(projectDir, ".pi", "agent", "pi-permissions.jsonc")
}

// agentDirs lists the agent directories pi reads, lowest precedence first,
// each with the origin of its rules.
func agentDirs(opts LoadOptions) [][2]string {
	var dirs [][2]string
	if opts.AgentDir != "" {
		dirs = append(dirs, [2]string{filepath.Join(opts.AgentDir, "agents"), OriginAgent})
	}
	if opts.TrustProject && opts.ProjectDir != "" {
		dirs = append(dirs, [2]string{filepath.Join(opts.ProjectDir, ".pi", "agents"), OriginProjectAgent})
	}
	return dirs
}

// AgentFiles lists the files pi reads for agent name, lowest precedence
// first, each with its origin (agent, project-agent); they need not exist.
func AgentFiles(opts LoadOptions, name string) [][2]string {
	files := agentDirs(opts)
	for i := range files {
		files[i][0] = filepath.Join(files[i][0], name+".md")
	}
	return files
}

// watchPaths lists the policy files and agent directories of opts.
func watchPaths(opts LoadOptions) []string {
	var paths []string
	if opts.AgentDir != "" {
		paths = append(paths, GlobalConfigPath(opts.AgentDir), filepath.Join(opts.AgentDir, "agents"))
	}
	if opts.TrustProject && opts.ProjectDir != "" {
		paths = append(paths, ProjectConfigPaths(opts.ProjectDir)...)
		paths = append(paths, LegacyProjectPath(opts.ProjectDir))
		paths = append(paths, filepath.Join(opts.ProjectDir, ".pi", "agents"))
	}
	return paths
}

// Load reads the root's policy. It never fails: a file that cannot be used
// becomes a Problem, and an unusable non-global scope sets the fail-closed
// floor (ruleset-semantics §2.2).
func Load(opts LoadOptions) *Policy {
	p := &Policy{opts: opts, agents: map[string]*ruleset{}, watch: watchPaths(opts), projectRoots: projectRoots(opts.ProjectDir)}
	held := opts.HoldProjectAllows && opts.TrustProject
	if held {
		p.bytesRead = map[string][]byte{}
	}
	shared, floor := p.loadShared()
	agents := p.loadAgents()
	p.composeAll(shared, floor, agents)
	// Without a project file read, the project can allow nothing.
	if held && len(p.project) > 0 {
		outside := opts
		outside.TrustProject, outside.HoldProjectAllows, outside.Overlay = false, false, p.bytesRead
		p.outside = Load(outside)
		p.outside.opts.Overlay = opts.Overlay // the bytes are not kept beyond the load
	}
	p.bytesRead = nil
	return p
}

// loadShared reads the global config, then the project's when it is trusted,
// into the scopes every agent shares (global first); floor holds the
// problems of project files that could not be read.
func (p *Policy) loadShared() (shared []*permissions, floor []Problem) {
	opts := p.opts
	if opts.AgentDir != "" {
		file := GlobalConfigPath(opts.AgentDir)
		if cfg, ok := p.readConfig(file, OriginGlobal, false); ok {
			shared = appendScope(shared, cfg.perms)
			p.setYolo(cfg.yolo, file)
		}
	}
	if !opts.TrustProject || opts.ProjectDir == "" {
		return shared, floor
	}
	p.legacyYolo(LegacyProjectPath(opts.ProjectDir))
	var files []*permissions
	for i, file := range ProjectConfigPaths(opts.ProjectDir) {
		cfg, ok := p.readConfig(file, OriginProject, true)
		if ok {
			if cfg.perms != nil {
				files = append(files, cfg.perms)
			}
			// config.local.json may only turn yolo off (decision 0170).
			if local := i == 1; !local || cfg.yolo != nil && !*cfg.yolo {
				p.setYolo(cfg.yolo, file)
			}
		} else if n := len(p.problems); n > 0 && p.problems[n-1].File == file {
			floor = append(floor, p.problems[n-1])
		}
	}
	// As pi (mergeUnifiedConfigs): config.local.json merges over
	// config.json as raw files, then the one project scope is expanded
	// and merged with the others (decision 0172).
	if len(files) > 0 {
		shared = appendScope(shared, mergeScopes(files))
	}
	return shared, floor
}

// agentScopes is what the agent directories hold: each agent's scopes, the
// problems that floor one agent, and those that floor every agent (a
// directory that cannot be listed).
type agentScopes struct {
	scopes    map[string][]*permissions
	floor     map[string][]Problem
	listFloor []Problem
	folds     bool // for one dir's: its file system folds case
}

// loadAgents reads every agents/<name>.md of the agent directories.
func (p *Policy) loadAgents() agentScopes {
	a := newAgentScopes()
	var dirs []agentScopes // each dir's files, in load order
	for _, d := range agentDirs(p.opts) {
		dir, origin := d[0], d[1]
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			pr := p.problem(dir, "the agent directory cannot be listed ("+printable(err.Error())+")", "; every agent's policy is held to ask by the fail-closed floor", true)
			a.listFloor = append(a.listFloor, pr)
			continue
		}
		own := newAgentScopes()
		own.folds = foldsCase(dir, entries)
		p.foldsCase = p.foldsCase || own.folds
		for _, e := range entries {
			if name, isAgent := agentFileName(e.Name(), own.folds); isAgent {
				p.loadAgent(&own, filepath.Join(dir, e.Name()), name, origin)
			}
		}
		dirs = append(dirs, own)
	}
	// An agent reads, from each dir, the file pi opens for its name there:
	// on a dir that folds case, its case variant's (decision 0241).
	for _, d := range dirs {
		for name := range d.scopes {
			if _, ok := a.scopes[name]; ok {
				continue
			}
			a.scopes[name] = nil
			for _, from := range dirs {
				if k, ok := from.opened(name); ok {
					a.scopes[name] = append(a.scopes[name], from.scopes[k]...)
					a.floor[name] = append(a.floor[name], from.floor[k]...)
				}
			}
		}
	}
	return a
}

func newAgentScopes() agentScopes {
	return agentScopes{scopes: map[string][]*permissions{}, floor: map[string][]Problem{}}
}

// opened is the name of d's file pi opens for agent name: name's own, or
// where d's file system folds case, the one differing from it only by case
// (a listing of such a dir holds one at most).
func (d agentScopes) opened(name string) (string, bool) {
	if _, ok := d.scopes[name]; ok || !d.folds {
		return name, ok
	}
	for k := range d.scopes {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// agentLstat is how foldsCase looks a name up; a test stands in a
// case-folding file system for it.
var agentLstat = os.Lstat

// foldsCase reports whether dir's file system finds an entry under its name
// in another case (decision 0241). One listing holding two names that
// differ only by case proves it does not.
func foldsCase(dir string, entries []os.DirEntry) bool {
	probe, seen := "", make(map[string]bool, len(entries))
	for _, e := range entries {
		folded := strings.ToLower(e.Name())
		if seen[folded] {
			return false
		}
		seen[folded] = true
		if probe == "" && strings.Map(swapCase, e.Name()) != e.Name() {
			probe = e.Name()
		}
	}
	if probe == "" {
		return false
	}
	a, err := agentLstat(filepath.Join(dir, probe))
	if err != nil {
		return false
	}
	b, err := agentLstat(filepath.Join(dir, strings.Map(swapCase, probe)))
	return err == nil && os.SameFile(a, b)
}

func swapCase(r rune) rune {
	if unicode.IsUpper(r) {
		return unicode.ToLower(r)
	}
	return unicode.ToUpper(r)
}

// agentFileName is the agent an entry of an agents directory defines: pi
// opens <name>.md, which a case-folding file system also finds as <name>.MD.
func agentFileName(file string, folds bool) (string, bool) {
	n := len(file) - len(".md")
	if n <= 0 || file[n:] != ".md" && !(folds && strings.EqualFold(file[n:], ".md")) {
		return "", false
	}
	return file[:n], true
}

// loadAgent reads one agent file into a.
func (p *Policy) loadAgent(a *agentScopes, file, name, origin string) {
	// As in pi: a dangling link is no file, but anything else under
	// that name that cannot be read (a directory included) floors.
	data, err := p.readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		if errors.Is(err, safefs.ErrTooLarge) {
			p.unheld(file, name, "the agent file is over the "+strconv.Itoa(maxPolicyFileSize>>20)+" MiB permtui reads")
		} else {
			pr := p.problem(file, "the agent file cannot be read ("+printable(err.Error())+")", "; agent "+printable(name)+"'s policy is held to ask by the fail-closed floor", true)
			a.floor[name] = append(a.floor[name], pr)
		}
		if _, ok := a.scopes[name]; !ok {
			a.scopes[name] = nil // the agent exists, with no rules
		}
		return
	}
	p.noteRead(file, origin)
	a.scopes[name] = appendScope(a.scopes[name], agentPermissions(string(data), origin, file))
}

// composeAll compiles the base ruleset and each agent's within one budget.
// Every ruleset repeats the shared rules, so the rules compiled in all are
// bounded, not just each file (decision 0171). What does not fit is a
// problem, and serve holds every allow while it lasts (decision 0052).
func (p *Policy) composeAll(shared []*permissions, floor []Problem, a agentScopes) {
	home := p.opts.Home
	budget := maxComposedRules
	base := mergeScopes(shared)
	if n := ruleCount(base); n > budget {
		p.unheld(GlobalConfigPath(p.opts.AgentDir), "", "the global and project configs hold "+strconv.Itoa(n)+" rules, over the "+
			strconv.Itoa(maxComposedRules)+" permtui compiles")
		base = newOrdered[surfaceValue]()
	}
	p.base = compose(base, floor, home)
	budget -= len(p.base.rules)
	var over []string
	for _, name := range slices.Sorted(maps.Keys(a.scopes)) {
		merged := mergeScopes(slices.Concat(shared, a.scopes[name]))
		if ruleCount(merged) > budget {
			over = append(over, name)
			p.agents[name] = p.base // its own rules left out: the problem below says so
			continue
		}
		p.agents[name] = compose(merged, slices.Concat(floor, a.listFloor, a.floor[name]), home)
		budget -= len(p.agents[name].rules)
	}
	for _, name := range over {
		p.unheld(filepath.Join(p.opts.AgentDir, "agents"), name, "the agent files would make more than "+strconv.Itoa(maxComposedRules)+
			" rules in all with agent "+printable(name)+"'s")
	}
	if len(a.listFloor) > 0 {
		p.unlisted = p.base // only with the problems that hold every allow
		if ruleCount(base) <= budget {
			p.unlisted = compose(base, slices.Concat(floor, a.listFloor), home)
		}
	}
}

// ruleCount is about the number of rules compose makes of merged.
func ruleCount(merged *permissions) int {
	n := 1 + len(mcpBaseline)
	keys, vals := merged.all()
	for i := range keys {
		n += vals[i].patterns.Len()
	}
	return n
}

func appendScope(scopes []*permissions, perms *permissions) []*permissions {
	if perms == nil {
		return scopes
	}
	return append(scopes, expandDirectional(perms))
}

func (p *Policy) setYolo(v *bool, file string) {
	if v != nil {
		p.yolo, p.yoloFrom = *v, "yoloMode "+strconv.FormatBool(*v)+" in "+printable(file)
	}
}

// legacyYolo applies a legacy file's yoloMode, only when false: pi honours
// either value, so taking a true would widen authority from a file the
// user may have forgotten (decision 0170). A file that exists but cannot
// be read might hold a false, so it turns yolo off and is a problem; one
// pi's parser rejects contributes nothing, as in pi.
func (p *Policy) legacyYolo(file string) {
	data, err := p.readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		p.problem(file, "cannot be read ("+printable(err.Error())+")", "; it may set yoloMode false, so yoloMode is off", false)
		p.yolo, p.yoloFrom = false, "the unreadable legacy file "+printable(file)
		return
	}
	if cfg, err := parseConfig(string(data), OriginProject, file); err == nil && cfg.yolo != nil && !*cfg.yolo {
		p.setYolo(cfg.yolo, file)
	}
}

// unheld records a policy pi reads that permtui cannot hold (decision 0177):
// agent's, or with agent "" the shared one.
func (p *Policy) unheld(file, agent, cause string) {
	whose := ""
	if agent != "" {
		whose = " of agent " + printable(agent)
	}
	msg := cause + "; pi reads it, so any of its denies may apply: permtui denies every ask" + whose + " until it is smaller"
	p.problems = append(p.problems, Problem{File: file, Message: msg, Unheld: true, Agent: agent, cause: cause})
}

func (p *Policy) problem(file, cause, consequence string, failClosed bool) Problem {
	pr := Problem{File: file, Message: cause + consequence, FailClosed: failClosed, cause: cause}
	p.problems = append(p.problems, pr)
	return pr
}

// noteRead records a policy file read, and whether it is the project's.
func (p *Policy) noteRead(file, origin string) {
	p.read = append(p.read, file)
	if origin == OriginProject || origin == OriginProjectAgent {
		p.project = append(p.project, file)
	}
}

// readConfig reads and validates one config file. A missing file is no
// problem; any other failure is recorded and reported as !ok.
func (p *Policy) readConfig(file, origin string, nonGlobal bool) (configFile, bool) {
	consequence := "; it contributes no rules (other scopes stay in force)"
	if nonGlobal {
		consequence = "; it contributes no rules and the fail-closed floor turns every allow into ask"
	}
	data, err := p.readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return configFile{}, false
	}
	if errors.Is(err, safefs.ErrTooLarge) {
		p.unheld(file, "", "is over the "+strconv.Itoa(maxPolicyFileSize>>20)+" MiB permtui reads ("+printable(err.Error())+")")
		return configFile{}, false
	}
	if err != nil {
		p.problem(file, "cannot be read ("+printable(err.Error())+")", consequence, nonGlobal)
		return configFile{}, false
	}
	p.noteRead(file, origin)
	cfg, err := parseConfig(string(data), origin, file)
	if err != nil {
		if denies := salvageDenies(string(data)); len(denies) > 0 {
			consequence += OutOfForceDenies + printable(strings.Join(denies, ", "))
		}
		p.problem(file, "rejected: "+printable(err.Error()), consequence, nonGlobal)
		return configFile{}, false
	}
	return cfg, true
}
