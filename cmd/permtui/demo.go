package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/demo"
)

const demoSynopsis = `demo [flags]

Builds a throw-away pi agent dir with a sample root policy, starts simulated pi
children that forward real request files over two root sessions, and serves
them with the console (or headless). Nothing outside a temporary directory is
touched.`

// childGrace is how long children may still poll after the server stopped:
// a few of pi's 250 ms polls.
const childGrace = time.Second

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	var keep bool
	fs := newFlagSet("demo", demoSynopsis, stdout, stderr)
	f.frontEnd.register(fs)
	fs.BoolVar(&keep, "keep", false, "keep the demo's temporary directory (its audit log, grants and children's log)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	if !f.headless && !isTerminal() {
		fmt.Fprintln(stderr, "permtui demo: no terminal for the console; running headless (asks are denied)")
		f.headless = true
	}

	root, err := os.MkdirTemp("", "permtui-demo-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintln(stderr, "permtui demo: kept", root)
	} else {
		defer os.RemoveAll(root)
	}
	env, err := demo.Setup(root)
	if err != nil {
		return err
	}
	f.agentDir, f.project, f.stateDir = env.AgentDir, env.Project, env.StateDir
	f.sessions = env.Sessions

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Children report as they are answered: on stderr when headless (stdout is
	// the event stream), otherwise collected and printed after the console.
	var mu sync.Mutex
	var answers []string
	pace := 1.0
	if f.headless {
		pace = 0.2 // nobody is reading along; keep the headless run short
	}
	// Children outlive the server briefly so they read the answers it writes
	// while shutting down (open asks are denied as "permtui exited").
	asks, stopAsking := context.WithCancel(context.Background())
	defer stopAsking()
	childrenDone := make(chan struct{})
	go func() {
		defer close(childrenDone)
		demo.Run(ctx, asks, env, demo.Script(), pace, func(r demo.Report) {
			if f.headless {
				fmt.Fprintf(stderr, "%s   [%s]\n", r, r.Step.Shows)
				return
			}
			mu.Lock()
			answers = append(answers, r.String())
			mu.Unlock()
		})
		if f.headless {
			cancel() // every child has its answer: the headless demo is over
		}
	}()

	err = serveUntilDone(ctx, f, stdout)
	cancel()
	select {
	case <-childrenDone:
	case <-time.After(childGrace):
		stopAsking()
		<-childrenDone
	}
	if !f.headless {
		fmt.Fprintln(stdout, "What the simulated children got:")
		for _, line := range answers {
			fmt.Fprintln(stdout, " ", line)
		}
	}
	return err
}
