package policyedit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
)

// Target is the file a rule is written to.
type Target struct {
	Scope  Scope
	Agent  string // ScopeAgent only
	File   string
	Origin string // the origin pi gives its rules: global, project, agent, project-agent
}

// Locate finds the file pi reads for scope. An agent rule goes to the file pi
// reads last for that agent: the project's agent file when it exists (and the
// project is trusted), else the global one; but an allow while the project's
// allows are held goes to the global one, as the project's would decide
// nothing in serve (decision 0240). permtui never creates an agent file: an
// agent is defined by a person, not by a rule (decision 0071).
func Locate(opts resolve.LoadOptions, scope Scope, agent string, action resolve.Action) (Target, error) {
	switch scope {
	case ScopeGlobal:
		if opts.AgentDir == "" {
			return Target{}, errors.New("no agent dir: the global config has no place")
		}
		return Target{Scope: scope, File: resolve.GlobalConfigPath(opts.AgentDir), Origin: resolve.OriginGlobal}, nil
	case ScopeProject:
		if opts.ProjectDir == "" || !opts.TrustProject {
			return Target{}, errors.New("the project is not trusted (or not given): pi reads no project config, so a rule there would decide nothing")
		}
		return Target{Scope: scope, File: resolve.ProjectConfigPaths(opts.ProjectDir)[0], Origin: resolve.OriginProject}, nil
	case ScopeAgent:
		return locateAgent(opts, agent, action == resolve.Allow && opts.HoldProjectAllows)
	}
	return Target{}, fmt.Errorf("unknown scope %q", scope)
}

// locateAgent finds agent's file, the project's left out for a held allow.
func locateAgent(opts resolve.LoadOptions, agent string, heldAllow bool) (Target, error) {
	if err := validAgentName(agent); err != nil {
		return Target{}, err
	}
	files := resolve.AgentFiles(opts, agent)
	held := ""
	for i := len(files) - 1; i >= 0; i-- {
		fi, err := os.Stat(files[i][0])
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Target{}, fmt.Errorf("agent file: %w", err)
		}
		if heldAllow && files[i][1] == resolve.OriginProjectAgent {
			held = files[i][0]
			continue
		}
		if !fi.Mode().IsRegular() {
			return Target{}, fmt.Errorf("%s is not a regular file", files[i][0])
		}
		return Target{Scope: ScopeAgent, Agent: agent, File: files[i][0], Origin: files[i][1]}, nil
	}
	if held != "" {
		return Target{}, fmt.Errorf("agent %q has a file only in the project (%s), whose allows serve holds for a person while the project is not trusted, so an allow there would decide nothing; pass --trust-project to write it there, or give the agent a file of your own (%s)",
			agent, held, files[0][0])
	}
	var where []string
	for _, f := range files {
		where = append(where, f[0])
	}
	return Target{}, fmt.Errorf("agent %q has no file (looked for %s); permtui adds rules to an agent's file but does not create agents", agent, strings.Join(where, ", "))
}

// validAgentName refuses names that are not one file name in agents/.
func validAgentName(name string) error {
	switch {
	case name == "":
		return errors.New("--scope agent needs --agent NAME")
	case name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("agent name %q cannot name a file in agents/", name)
	}
	return nil
}

// realFile is the file a write to file really changes: every link on the
// way resolved; for a file not there yet, its nearest existing directory.
func realFile(file string) (string, error) {
	real, err := filepath.EvalSymlinks(file)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	// A dangling link resolves to its missing target.
	if dest, lerr := os.Readlink(file); lerr == nil {
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(file), dest)
		}
		return realFile(dest)
	}
	dir := filepath.Dir(file)
	if dir == file {
		return file, nil
	}
	realDir, err := realFile(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(realDir, filepath.Base(file)), nil
}

// checkRealFile refuses a project-scope file (the project config, a project
// agent file) that is really outside the project: the repository brings
// those files and their links, and a link must not send a rule into the
// global config or anywhere else (decision 0142). A global or agent file is
// the person's own: a link to their dotfiles is kept.
func checkRealFile(opts resolve.LoadOptions, t Target, real string) error {
	if t.Origin != resolve.OriginProject && t.Origin != resolve.OriginProjectAgent {
		return nil
	}
	root, err := realFile(opts.ProjectDir)
	if err != nil {
		return err
	}
	if !safefs.Within(real, root) {
		return fmt.Errorf("%s is really %s, outside the project %s: a link the repository brings must not decide where a %s rule goes; nothing written", t.File, real, root, t.Scope)
	}
	return nil
}
