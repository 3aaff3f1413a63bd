package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/headless"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/ui"
	"github.com/permtui/permtui/internal/wire"
)

const serveSynopsis = `serve [flags]

Serves the permission-forwarding inbox of the root session(s): answers asks
from the root's pi-permission-system policy and queues the rest in the console.`

// serveFlags are the flags of serve; demo has all but the common ones, which
// it sets itself.
type serveFlags struct {
	common
	frontEnd
	hub  hubFlags
	away awayFlags
}

// frontEnd holds the flags that choose and tune how asks are served.
type frontEnd struct {
	headless      bool
	ask           string
	poll          bool
	bell          bool
	notify        bool
	confirmDouble bool
	settle        time.Duration
	mouse         bool
}

func (f *serveFlags) register(fs flagSet) {
	f.common.register(fs)
	f.frontEnd.register(fs)
	f.hub.register(fs, "as", "approver name at the hub, with a standard NATS .creds file (default: the name in --creds)")
	f.away.register(fs)
}

func (f *frontEnd) register(fs flagSet) {
	fs.BoolVar(&f.headless, "headless", false, "no console: print one JSON line per event on stdout")
	fs.StringVar(&f.ask, "ask", "", "headless: what to do with asks nobody can answer: deny (the default on this host's inbox) or leave (the default with --hub)")
	fs.BoolVar(&f.poll, "poll", false, "rescan the inbox instead of using inotify (network filesystems)")
	fs.BoolVar(&f.bell, "bell", true, "ring the terminal bell on each new ask")
	fs.BoolVar(&f.notify, "notify", false, "send a desktop notification (OSC 9 / OSC 777) on each new ask; it carries no command text")
	fs.BoolVar(&f.confirmDouble, "confirm-double-press", false, "decisions need two presses of the same key")
	fs.BoolVar(&f.mouse, "mouse", true, "click selects a row, the wheel scrolls (hold shift to select text in most terminals)")
	fs.DurationVar(&f.settle, "settle", ui.DefaultSettle, "decision keys are ignored this long after the highlighted ask changed by itself (0: off)")
}

func (f *frontEnd) check() error {
	if f.ask != "" && f.ask != headless.Deny && f.ask != headless.Leave {
		return fmt.Errorf("--ask must be deny or leave, not %q", f.ask)
	}
	return nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	fs := newFlagSet("serve", serveSynopsis, stdout, stderr)
	f.register(fs)
	if err := fs.parse(args, f.frontEnd.check, f.hub.check, f.away.check); err != nil {
		return err
	}
	if err := f.resolveDefaults(); err != nil {
		return err
	}
	if err := f.checkAgentDir(); err != nil && f.hub.url == "" {
		return err
	}
	if !f.headless && !isTerminal() {
		return errors.New("no terminal to show the console on; use 'permtui serve --headless' to serve without one")
	}
	return serveUntilDone(ctx, f, stdout)
}

func isTerminal() bool {
	return term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd())
}

// serveUntilDone runs the serving loop with the chosen front end until ctx is
// cancelled (or the person quits the console). With --hub the front end
// attaches to the hub instead of this machine's inbox.
func serveUntilDone(ctx context.Context, f serveFlags, stdout io.Writer) error {
	if f.hub.url != "" {
		return attachHub(ctx, f, stdout)
	}
	logger, closeLog, err := stateLog(f.stateDir)
	if err != nil {
		return err
	}
	defer closeLog()
	grantStore, err := grants.Open(filepath.Join(f.stateDir, "grants"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Headless --ask=leave leaves waiting asks on SIGTERM too, for the next
	// server (decision 0055).
	srv, err := startLocal(ctx, f.common, f.poll, logger, grantStore, grantStore, f.headless && f.askPolicy(false) == headless.Leave)
	if err != nil {
		return err
	}
	awayDone, err := startAway(srv, f.away, logger)
	if err != nil {
		return err
	}
	defer awayDone()
	rules := consoleRules{ruleService{opts: f.loadOptions(), stateDir: f.stateDir}}
	err = serveWhile(ctx, cancel, srv.Run, func() error {
		return runFrontEnd(ctx, srv, f.frontEnd, stdout, consoleSetup{rules: rules, home: rules.svc.opts.Home})
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// serveWhile runs a serving loop (a server's or a hub approver's Run) while
// front runs, then ends it (cancel) and waits for it; front's error comes
// first, then the loop's.
func serveWhile(ctx context.Context, cancel context.CancelFunc, run func(context.Context) error, front func() error) error {
	served := make(chan error, 1)
	go func() { served <- run(ctx) }()
	err := front()
	cancel()
	if runErr := <-served; runErr != nil && !errors.Is(runErr, context.Canceled) && err == nil {
		err = runErr
	}
	return err
}

// stateLog makes the state dir and opens permtui's log in it.
func stateLog(stateDir string) (*slog.Logger, func(), error) {
	if err := safefs.MkdirPrivate(stateDir); err != nil {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	return openLog(filepath.Join(stateDir, "permtui.log"))
}

// startLocal builds the serving loop for this machine's inbox, with the
// policy watched until ctx ends; the caller runs it. A relay passes its hub
// grants, no session denies, and leaves open asks on disk at exit.
func startLocal(ctx context.Context, c common, poll bool, logger *slog.Logger, grantStore serve.GrantStore, denies serve.DenyStore, leaveOnExit bool) (*serve.Server, error) {
	store := resolve.NewStore(c.loadOptions())
	srv, err := serve.New(serve.Config{
		Layout:      wire.NewLayout(c.agentDir),
		Sessions:    c.sessions,
		Poll:        poll,
		StateDir:    c.stateDir,
		Judge:       func() serve.Judge { return store.Policy() },
		Grants:      grantStore,
		Denies:      denies,
		Logger:      logger,
		LeaveOnExit: leaveOnExit,
	})
	if err != nil {
		return nil, err
	}
	go store.Watch(ctx, func(p *resolve.Policy) { srv.PolicyLoaded(policyStatus(p)) })
	srv.PolicyLoaded(policyStatus(store.Policy()))
	return srv, nil
}

// source is what a front end serves: the local *serve.Server, or a hub
// approver standing for every relay's server.
type source interface {
	headless.Server
	ui.Backend
}

// consoleSetup is what the console gets beyond its source: where rules are
// written (nil where the policy is not on this host, as over a hub), the
// home the policy expands "~" to, and whether the asks are a hub's.
type consoleSetup struct {
	rules   ui.RuleBackend
	home    string
	overHub bool
}

// runFrontEnd runs the headless printer or the console until the events end
// or the person quits.
func runFrontEnd(ctx context.Context, src source, f frontEnd, stdout io.Writer, setup consoleSetup) error {
	if f.headless {
		return headless.Run(ctx, src, stdout, f.askPolicy(setup.overHub))
	}
	return runConsole(ctx, src, f, setup)
}

// askPolicy is --ask, or its default: deny on this host's inbox, where
// nobody else can answer; leave over a hub, where a person's console may be
// attached and the first decision made at the hub is an ask's only one
// (decision 0213).
func (f frontEnd) askPolicy(overHub bool) string {
	switch {
	case f.ask != "":
		return f.ask
	case overHub:
		return headless.Leave
	}
	return headless.Deny
}

func runConsole(ctx context.Context, src source, f frontEnd, setup consoleSetup) error {
	// Only a local server can leave its waiting asks on disk.
	leaver, canLeave := src.(interface{ LeaveWaitingOnExit() })
	model := ui.New(ui.Options{
		CanLeave:      canLeave,
		Backend:       src,
		Rules:         setup.rules,
		Bell:          f.bell,
		Notify:        f.notify,
		ConfirmDouble: f.confirmDouble,
		Settle:        settleOption(f.settle),
		OverHub:       setup.overHub,
		Home:          setup.home,
	})
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx)}
	if f.mouse {
		opts = append(opts, tea.WithMouseCellMotion())
	}
	p := tea.NewProgram(model, opts...)
	go func() {
		for ev := range src.Events() {
			p.Send(ui.EventMsg{Event: ev})
		}
	}()
	_, err := p.Run()
	if canLeave && model.LeaveWaiting() {
		leaver.LeaveWaitingOnExit()
	}
	if errors.Is(err, tea.ErrProgramKilled) {
		return nil
	}
	return err
}

// settleOption maps the flag, where 0 means off, to ui.Options.Settle,
// where 0 means the default.
func settleOption(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// policyStatus is what the front ends show of a loaded policy.
func policyStatus(p *resolve.Policy) serve.PolicyStatus {
	project := p.ProjectFiles()
	st := serve.PolicyStatus{NoFile: noPolicyNotice(p), ProjectFiles: project, ProjectAllowsHeld: len(project) > 0 && p.WithoutProject() != nil}
	for _, pr := range p.Problems() {
		// The message already says what a fail-closed problem does.
		st.Problems = append(st.Problems, strconv.Quote(pr.File)+": "+pr.Message)
	}
	return st
}

// openLog opens permtui's own log: JSON lines in a 0600 file, never the
// terminal the console owns.
func openLog(path string) (*slog.Logger, func(), error) {
	f, err := safefs.OpenAppendPrivate(path)
	if err != nil {
		return nil, nil, fmt.Errorf("log: %w", err)
	}
	return slog.New(slog.NewJSONHandler(f, nil)), func() { f.Close() }, nil
}
