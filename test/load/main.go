// Command load is the serving benchmark: it drives a real permtui process,
// built from this tree, with simulated pi children writing real request
// files, and reports latency at steady rates, the drain time of a burst,
// the server's CPU per answer and its idle cost with many quiet sessions,
// beside a minimal responder built for the comparison (responder.go) and
// pi's own serving node (pi.go, when ../shared/pi-peer is set up), with
// permtui's figures as ratios of theirs.
//
//	go run ./test/load                       # the full run (task bench-load)
//	go run ./test/load -dirs /dev/shm -idle 10,100
//	go run ./test/load -memory 20x64x1000000  # peak RSS under asks for a person
//
// It is test support, never part of permtui.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	permtui   string   // the permtui binary
	self      []string // argv that starts the minimal responder, before its flags
	dirs      []string // where the inboxes live (tmpfs, disk)
	servers   []string // "permtui", "minimal"
	rates     []int
	steadyFor time.Duration
	burst     int
	idle      []int
	idleFor   time.Duration
	probeRate int
	probeFor  time.Duration
	pi        piPeer // pi's own serving node, when servers names "pi"
	piSkipped string // why pi's node is left out, for the report
	out       io.Writer
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "responder" {
		os.Exit(responderMain(os.Args[2:]))
	}
	var cfg config
	var dirs, servers, rates, idle, memory, peer string
	flag.StringVar(&cfg.permtui, "permtui", "", "permtui binary (default: built from this tree)")
	flag.StringVar(&dirs, "dirs", "/dev/shm,"+os.TempDir(), "comma-separated parent directories for the inboxes (tmpfs, disk)")
	flag.StringVar(&servers, "servers", "permtui,minimal,pi", "servers to measure (pi: pi's own serving node, from -pi-peer)")
	flag.StringVar(&peer, "pi-peer", "", "the pi-peer folder with tsx.sh and server.ts (default ../shared/pi-peer beside the module)")
	flag.StringVar(&rates, "rates", "200,1000,5000", "steady request rates per second")
	flag.DurationVar(&cfg.steadyFor, "steady-for", 5*time.Second, "duration of each steady rate")
	flag.IntVar(&cfg.burst, "burst", 10000, "requests in the burst")
	flag.StringVar(&idle, "idle", "10,100,1000", "idle session counts")
	flag.DurationVar(&cfg.idleFor, "idle-for", 10*time.Second, "how long idle CPU is measured")
	flag.IntVar(&cfg.probeRate, "probe-rate", 100, "request rate into one session while the others idle")
	flag.DurationVar(&cfg.probeFor, "probe-for", 3*time.Second, "duration of the probe")
	flag.StringVar(&memory, "memory", "", "only the memory scenario: SESSIONSxASKSxBYTES asks for a person, e.g. 20x64x1000000")
	flag.Parse()
	var err error
	if cfg.rates, err = ints(rates); err == nil {
		cfg.idle, err = ints(idle)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg.dirs, cfg.servers = split(dirs), split(servers)
	if slices.Contains(cfg.servers, "pi") {
		if peer == "" {
			peer = filepath.Join(moduleDir(), "..", "shared", "pi-peer")
		}
		if cfg.pi, cfg.piSkipped = findPiPeer(peer); cfg.piSkipped != "" {
			fmt.Fprintln(os.Stderr, "load: pi's node is left out:", cfg.piSkipped)
			cfg.servers = slices.DeleteFunc(cfg.servers, func(s string) bool { return s == "pi" })
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg.self, cfg.out = []string{self, "responder"}, os.Stdout
	if cfg.permtui == "" {
		tmp, err := os.MkdirTemp("", "permtui-load-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(tmp)
		if cfg.permtui, err = buildPermtui(tmp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if memory != "" {
		err = runMemory(cfg, memory)
	} else {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func responderMain(args []string) int {
	fs := flag.NewFlagSet("responder", flag.ExitOnError)
	root := fs.String("root", "", "forwarding root")
	_ = fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runResponder(ctx, *root); err != nil {
		fmt.Fprintln(os.Stderr, "responder:", err)
		return 1
	}
	return 0
}

// moduleDir is the root of the module this runs in ("" if go cannot say).
func moduleDir() string {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return ""
	}
	return filepath.Dir(strings.TrimSpace(string(gomod)))
}

// buildPermtui builds ./cmd/permtui of the module this runs in.
func buildPermtui(dir string) (string, error) {
	root := moduleDir()
	if root == "" {
		return "", errors.New("go env GOMOD: no module")
	}
	bin := filepath.Join(dir, "permtui")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/permtui")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build permtui: %v\n%s", err, out)
	}
	return bin, nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("not a positive count: %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
