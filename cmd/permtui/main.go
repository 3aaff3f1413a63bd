// Command permtui serves the permission-forwarding inbox of a root pi session:
// it answers subagents' asks from the root's recorded policy and queues the
// rest in a terminal console for a person.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `permtui — approve or deny the permission requests of pi subagents

Usage:
  permtui [serve] [flags]     serve the inbox with the console (the default)
  permtui serve --headless    serve without a console, one JSON line per event
  permtui demo [--headless]   run the embedded demo: a sample policy and simulated children
  permtui demo --hub          the demo across machines: an embedded hub, two relays, the console
  permtui resolve [flags]     judge a request or facts from the policy and print the verdict
  permtui rule add [flags]    write a rule into pi's policy, after a diff and a coverage preview
  permtui simulate [flags]    replay the audit log's asks against a candidate policy
  permtui hub [flags]         run the hub relays and consoles meet at (docs/hub.md)
  permtui hub users|provision set up an existing NATS cluster as the hub (docs/hub.md)
  permtui relay --hub URL --creds FILE
                              serve this host's inbox; asks that need a person go to the hub
  permtui --hub URL --creds FILE
                              the console (or serve --headless) for the asks of every relay
  permtui version             print the version

Run 'permtui <command> --help' for a command's flags.
`

func main() {
	oneProcessor(os.Args[1:])
	// A reader that goes away (serve --headless | head) makes a write to
	// stdout fail, and serving ends cleanly, rather than a SIGPIPE killing
	// the process with requests unanswered and its heartbeat behind. Caught,
	// not ignored: a child (--notify-cmd) still gets the default.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// SIGINT, SIGTERM and SIGHUP (a closed terminal or tmux pane) end
	// serving cleanly: open asks are answered and the heartbeat is removed
	// before exit.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// oneProcessor runs the commands that serve an inbox (serve, relay, demo)
// on one processor unless GOMAXPROCS says otherwise: serving is a chain of
// short steps handed between goroutines, and on several processors each
// hand-off wakes another thread, which cost more CPU than the steps
// themselves and slowed a burst (decision 0200). The hub is an embedded
// NATS server for every relay, whose work is parallel: it keeps the
// runtime's default, as the one-shot commands do (decision 0192).
func oneProcessor(args []string) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	switch cmd, _ := commandOf(args); cmd {
	case "serve", "relay", "demo":
		runtime.GOMAXPROCS(1)
	}
}

// commandOf splits a command line into its command ("help" and "version"
// for their flags, serve when it starts with a flag, "" when unknown) and
// the command's arguments.
func commandOf(args []string) (cmd string, rest []string) {
	if len(args) == 0 {
		return "serve", args
	}
	switch args[0] {
	case "serve", "demo", "resolve", "rule", "simulate", "hub", "relay", "version":
		return args[0], args[1:]
	case "-h", "--help", "help":
		return "help", nil
	case "--version", "-version":
		return "version", nil
	}
	if strings.HasPrefix(args[0], "-") {
		return "serve", args
	}
	return "", args
}

// run dispatches a command line until it is done or ctx ends; it returns the
// process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd, rest := commandOf(args)
	var err error
	switch cmd {
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "":
		fmt.Fprintf(stderr, "permtui: unknown command %q\n\n%s", args[0], usage)
		return 2
	case "serve":
		err = runServe(ctx, rest, stdout, stderr)
	case "demo":
		err = runDemo(ctx, rest, stdout, stderr)
	case "hub":
		err = runHub(ctx, rest, stdout, stderr)
	case "relay":
		err = runRelay(ctx, rest, stdout, stderr)
	case "resolve":
		err = runResolve(rest, stdin, stdout, stderr)
	case "rule":
		err = runRule(rest, stdin, stdout, stderr)
	case "simulate":
		err = runSimulate(rest, stdout, stderr)
	case "version":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "permtui: version takes no arguments (got %q)\n", rest[0])
			return 2
		}
		fmt.Fprintln(stdout, "permtui", version)
	}
	var status exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintln(stderr, "permtui:", err)
		return 1
	}
}
