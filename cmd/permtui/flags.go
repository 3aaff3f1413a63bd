package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// errUsage marks a command-line mistake already reported by the flag set.
var errUsage = errors.New("usage")

// common holds the flags shared by serve, demo and resolve.
type common struct {
	agentDir         string
	project          string
	stateDir         string
	sessions         listFlag
	untrustedProject bool
	trustProject     bool
	// projectGuessed: --project was not given, so the project is permtui's
	// own cwd, a guess at the root sessions' (decision 0234).
	projectGuessed bool
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// flagSet is a command's flags: usage mistakes are reported on stderr,
// --help prints the usage on stdout.
type flagSet struct {
	*flag.FlagSet
	stdout   io.Writer
	synopsis string
}

func newFlagSet(name, synopsis string, stdout, stderr io.Writer) flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	// A mistake gets its error and a pointer to the help, not the whole
	// flag list (which would push the error off the screen).
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Run 'permtui %s --help' for its flags.\n", name)
	}
	return flagSet{FlagSet: fs, stdout: stdout, synopsis: synopsis}
}

// printHelp writes the synopsis and every flag to stdout.
func (fs flagSet) printHelp() {
	fs.SetOutput(fs.stdout)
	fmt.Fprintf(fs.stdout, "Usage: permtui %s\n\nFlags:\n", fs.synopsis)
	fs.PrintDefaults()
}

func (c *common) register(fs flagSet) {
	c.registerPolicy(fs)
	fs.Var(&c.sessions, "session", "root session id to serve (repeatable; default: every session no other node serves)")
}

// registerPolicy registers the flags that say where the policy and
// permtui's state are, for the commands that serve no session (rule add,
// simulate): their help lists only the flags they use.
func (c *common) registerPolicy(fs flagSet) {
	fs.StringVar(&c.agentDir, "agent-dir", "", "pi agent dir (default $PI_CODING_AGENT_DIR, else ~/.pi/agent)")
	fs.StringVar(&c.project, "project", "", "the root session's working directory (default: current directory)")
	fs.StringVar(&c.stateDir, "state-dir", "", "permtui state: audit log, grants, log (default $PERMTUI_STATE_DIR, else $XDG_STATE_HOME/permtui, else ~/.local/state/permtui)")
	fs.BoolVar(&c.untrustedProject, "untrusted-project", false, "leave out the project's config and agent files, as pi does for an untrusted project")
	fs.BoolVar(&c.trustProject, "trust-project", false, "let the project's config and agent files allow asks; without it their denies and asks apply but an allow only they give goes to a person")
}

// parse parses args, then checks what they say: help comes back as
// flag.ErrHelp; usage mistakes (the flag set's, a stray argument, every
// check's) are reported together with the pointer to the help and come
// back as errUsage.
func (fs flagSet) parse(args []string, checks ...func() error) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.printHelp()
			return flag.ErrHelp
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	var mistakes []error
	if fs.NArg() > 0 {
		mistakes = append(mistakes, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	for _, check := range checks {
		mistakes = append(mistakes, check())
	}
	if err := errors.Join(mistakes...); err != nil {
		return fs.mistake(err)
	}
	return nil
}

// mistake reports a usage mistake, with the pointer to the help.
func (fs flagSet) mistake(err error) error {
	fmt.Fprintln(fs.Output(), err)
	fs.Usage()
	return errUsage
}

// together is the mistake of giving one of two flags without the other.
func together(a, b bool, flags string) error {
	if a != b {
		return errors.New(flags + " go together")
	}
	return nil
}

// resolveDefaults fills unset common flags from the environment.
func (c *common) resolveDefaults() error {
	home, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("cannot find the home directory: %w", err)
	}
	if c.trustProject && c.untrustedProject {
		return errors.New("--trust-project and --untrusted-project contradict each other: give one")
	}
	c.agentDir = cmp.Or(c.agentDir, wire.AgentDir(os.Getenv, home))
	if c.project == "" {
		if c.project, err = os.Getwd(); err != nil {
			return err
		}
		c.projectGuessed = true
	}
	c.stateDir = cmp.Or(c.stateDir, defaultStateDir(os.Getenv, home))
	for i, s := range c.sessions {
		id, ok := wire.NormalizeSessionID(s)
		if !ok {
			return fmt.Errorf("--session %q is not a usable session id", s)
		}
		c.sessions[i] = id
	}
	return nil
}

func defaultStateDir(getenv func(string) string, home string) string {
	if d := getenv("PERMTUI_STATE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "permtui")
	}
	return filepath.Join(home, ".local", "state", "permtui")
}

// loadOptions: the project's files are read unless --untrusted-project,
// and their allows held for a person unless --trust-project (decision 0206);
// the project is the named sessions' only when both were given (0234).
func (c *common) loadOptions() resolve.LoadOptions {
	home, _ := os.UserHomeDir()
	return resolve.LoadOptions{
		AgentDir:          c.agentDir,
		ProjectDir:        c.project,
		TrustProject:      !c.untrustedProject,
		HoldProjectAllows: !c.trustProject,
		ProjectNamed:      !c.projectGuessed && len(c.sessions) > 0,
		Home:              home,
	}
}

// checkAgentDir refuses an agent dir that does not exist: serving it would
// create pi's tree in the wrong place and judge by no policy at all (a typo
// in --agent-dir looked like a healthy, empty policy).
func (c *common) checkAgentDir() error {
	info, err := os.Stat(c.agentDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("agent dir %q does not exist: pi keeps its config and sessions there (--agent-dir, default $PI_CODING_AGENT_DIR, else ~/.pi/agent); start pi once or check the path", c.agentDir)
	case err != nil:
		return fmt.Errorf("agent dir: %w", err)
	case !info.IsDir():
		return fmt.Errorf("agent dir %q is not a directory", c.agentDir)
	}
	return nil
}

// agentDirEntries are what pi keeps in its agent dir; one of them shows a
// dir is pi's.
var agentDirEntries = []string{"extensions", "agents", "sessions", "settings.json", "auth.json"}

// checkPolicyAgentDir is checkAgentDir for the commands that write or judge
// by the global policy file: the agent dir must also not be the project's
// .pi (or inside it), where "global scope" would be the project's config,
// and must hold one of pi's agent-dir entries (~/.pi, missing /agent, holds
// none), since a rule written elsewhere is one pi never reads.
func (c *common) checkPolicyAgentDir() error {
	if err := c.checkAgentDir(); err != nil {
		return err
	}
	_, projectPi := safefs.RealPath(filepath.Join(c.project, ".pi"))
	if _, agentDir := safefs.RealPath(c.agentDir); safefs.Within(agentDir, projectPi) {
		return fmt.Errorf("agent dir %q is the project's config dir or inside it (%q): its global config %q is the project's config, not pi's global one; pass pi's agent dir (default ~/.pi/agent)",
			c.agentDir, projectPi, resolve.GlobalConfigPath(c.agentDir))
	}
	for _, name := range agentDirEntries {
		if _, err := os.Lstat(filepath.Join(c.agentDir, name)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("agent dir %q holds none of pi's agent-dir entries (looked for %s): pi's agent dir is ~/.pi/agent by default; check the path or start pi once",
		c.agentDir, strings.Join(agentDirEntries, ", "))
}

// noPolicyNotice says, when no policy file was found, that pi's built-in
// default applies and where permtui looked; "" when some file was read, or
// one was there but could not be used: its problem says what applies.
func noPolicyNotice(p *resolve.Policy) string {
	if len(p.Files()) > 0 || len(p.Problems()) > 0 {
		return ""
	}
	quoted := make([]string, 0, len(p.WatchPaths()))
	for _, path := range p.WatchPaths() {
		quoted = append(quoted, strconv.Quote(path))
	}
	return "no policy file found, so every ask goes to a person; looked in " + strings.Join(quoted, ", ")
}
