package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/demo"
	"github.com/permtui/permtui/internal/headless"
	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/safefs"
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
	var keep, overHub bool
	fs := newFlagSet("demo", demoSynopsis, stdout, stderr)
	f.frontEnd.register(fs)
	fs.BoolVar(&overHub, "hub", false, "across machines: an embedded hub, two relays (two hosts' agent dirs) and the console attached to the hub")
	fs.BoolVar(&keep, "keep", false, "keep the demo's temporary directory (its audit log, grants and children's log)")
	if err := fs.parse(args, f.check); err != nil {
		return err
	}
	if !f.headless && !isTerminal() {
		fmt.Fprintln(stderr, "permtui demo: no terminal for the console; running headless (asks are denied)")
		f.headless = true
	}
	f.ask = cmp.Or(f.ask, headless.Deny) // no person is attached anywhere in a headless demo, even over its hub

	root, err := os.MkdirTemp("", "permtui-demo-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintln(stderr, "permtui demo: kept", root)
	} else {
		defer os.RemoveAll(root)
	}
	envs, err := demoEnvs(root, overHub)
	if err != nil {
		return err
	}
	f.agentDir, f.project, f.stateDir = envs[""].AgentDir, envs[""].Project, envs[""].StateDir
	f.sessions = envs[""].Sessions

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if overHub {
		relaysDone, err := startDemoHub(ctx, root, envs, &f)
		if err != nil {
			return err
		}
		defer relaysDone()
	}

	children := startDemoChildren(ctx, cancel, envs, f.headless, stderr)
	defer children.stopAsking()

	err = serveUntilDone(ctx, f, stdout)
	cancel()
	select {
	case <-children.done:
	case <-time.After(childGrace):
		children.stopAsking()
		<-children.done
	}
	if !f.headless {
		fmt.Fprintln(stdout, "What the simulated children got:")
		for _, line := range children.answers {
			fmt.Fprintln(stdout, " ", line)
		}
	}
	return err
}

// demoEnvs lays out the demo's world under root: one host, or two (alpha
// and beta) for the demo across machines.
func demoEnvs(root string, overHub bool) (map[string]demo.Env, error) {
	hosts := map[string]string{"": root}
	if overHub {
		hosts = map[string]string{"alpha": filepath.Join(root, "alpha"), "beta": filepath.Join(root, "beta")}
	}
	envs := map[string]demo.Env{}
	for host, dir := range hosts {
		if err := safefs.MkdirPrivate(dir); err != nil {
			return nil, err
		}
		env, err := demo.Setup(dir)
		if err != nil {
			return nil, err
		}
		envs[host] = env
	}
	return envs, nil
}

// demoChildren are the simulated children of every demo host. Children
// outlive the server briefly so they read the answers it writes while
// shutting down (open asks are denied as "permtui exited"); done closes
// when all have their answers, and answers is complete then.
type demoChildren struct {
	done       chan struct{}
	stopAsking context.CancelFunc
	mu         sync.Mutex
	answers    []string
}

// startDemoChildren runs each host's script. They report as they are
// answered: on stderr when headless (stdout is the event stream), otherwise
// collected for after the console; a headless demo ends (cancel) once every
// child has its answer.
func startDemoChildren(ctx context.Context, cancel context.CancelFunc, envs map[string]demo.Env, headless bool, stderr io.Writer) *demoChildren {
	pace := 1.0
	if headless {
		pace = 0.2 // nobody is reading along; keep the headless run short
	}
	asks, stopAsking := context.WithCancel(context.Background())
	c := &demoChildren{done: make(chan struct{}), stopAsking: stopAsking}
	var children sync.WaitGroup
	for host, env := range envs {
		prefix := ""
		if host != "" {
			prefix = host + " "
		}
		children.Go(func() {
			demo.Run(ctx, asks, env, demo.Script(), pace, func(r demo.Report) {
				if headless {
					fmt.Fprintf(stderr, "%s%s   [%s]\n", prefix, r, r.Step.Shows)
					return
				}
				c.mu.Lock()
				c.answers = append(c.answers, prefix+r.String())
				c.mu.Unlock()
			})
		})
	}
	go func() {
		defer close(c.done)
		children.Wait()
		if headless {
			cancel() // every child has its answer: the headless demo is over
		}
	}()
	return c
}

// startDemoHub starts an embedded hub on a free loopback port, one relay per
// demo host, and points the front end at the hub. The returned function
// waits for the relays and stops the hub once ctx is done.
func startDemoHub(ctx context.Context, root string, envs map[string]demo.Env, f *serveFlags) (func(), error) {
	hosts := slices.Sorted(maps.Keys(envs)) // alpha and beta only: demoEnvs lays out no host "" over a hub
	h, err := hub.Start(hub.Config{
		Listen: "127.0.0.1:0", StoreDir: filepath.Join(root, "hub", "store"), CredsDir: filepath.Join(root, "hub", "creds"),
		Relays: hosts, Approvers: []string{"console"},
	})
	if err != nil {
		return nil, err
	}
	var relays sync.WaitGroup
	for _, host := range hosts {
		env := envs[host]
		rf := relayFlags{
			common: common{agentDir: env.AgentDir, project: env.Project, stateDir: env.StateDir, sessions: env.Sessions},
			hub:    hubFlags{url: h.URL(), creds: h.CredsFile(hub.RoleRelay, host)},
		}
		relays.Go(func() {
			_ = relayUntilDone(ctx, rf, io.Discard) // its problems are in its permtui.log
		})
	}
	f.hub = hubFlags{url: h.URL(), creds: h.CredsFile(hub.RoleApprover, "console")}
	f.stateDir = filepath.Join(root, "console")
	return func() {
		relays.Wait()
		h.Shutdown()
	}, nil
}
