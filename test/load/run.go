package main

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// fsName names a parent directory by its filesystem, for the report.
func fsName(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC {
		return "tmpfs " + dir
	}
	return "disk " + dir
}

func run(cfg config) error {
	fmt.Fprintf(cfg.out, "# permtui load benchmark, %s, %d CPUs\n\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU())
	if cfg.piSkipped != "" {
		fmt.Fprintf(cfg.out, "pi's node is not measured: %s\n\n", cfg.piSkipped)
	}
	for _, dir := range cfg.dirs {
		fs := fsName(dir)
		fmt.Fprintf(cfg.out, "## %s\n\n", fs)
		fmt.Fprintln(cfg.out, "| server | load | answered | p50 | p99 | max | drain | CPU/answer |")
		fmt.Fprintln(cfg.out, "| --- | --- | --- | --- | --- | --- | --- | --- |")
		var rows []row
		for _, srv := range cfg.servers {
			got, err := loadPhase(cfg, srv, dir)
			rows = append(rows, got...)
			if err != nil && srv != "pi" {
				return fmt.Errorf("%s on %s: %w", srv, fs, err)
			}
			if err != nil { // pi's node falling behind is a result, not a failure
				fmt.Fprintf(cfg.out, "| pi | stopped: %v | | | | | | |\n", err)
			}
		}
		fmt.Fprintln(cfg.out)
		printRatios(cfg.out, rows)
		if len(cfg.idle) == 0 {
			continue
		}
		fmt.Fprintln(cfg.out, "| server | idle sessions | CPU (% of a core) | oldest heartbeat | probe p50 | probe p99 |")
		fmt.Fprintln(cfg.out, "| --- | --- | --- | --- | --- | --- |")
		for _, srv := range cfg.servers {
			if srv == "pi" {
				continue // pi's node serves one session per process
			}
			for _, n := range cfg.idle {
				if err := idlePhase(cfg, srv, dir, n); err != nil {
					return fmt.Errorf("%s idle %d on %s: %w", srv, n, fs, err)
				}
			}
		}
		fmt.Fprintln(cfg.out)
	}
	return nil
}

func start(cfg config, srv string, w *world, explicit bool) (*server, error) {
	var argv []string
	switch srv {
	case "permtui":
		var sessions []string
		if explicit {
			sessions = w.sessions
		}
		argv = permtuiArgs(cfg.permtui, w, sessions)
	case "minimal":
		argv = append(append([]string{}, cfg.self...), minimalArgs(w)...)
	case "pi":
		argv = cfg.pi.args(w)
	default:
		return nil, fmt.Errorf("unknown server %q", srv)
	}
	s, err := startServer(srv, argv, srv == "pi")
	if err != nil {
		return nil, err
	}
	if srv == "pi" {
		err = awaitServing(s, s.stderr, 60*time.Second)
	} else {
		err = s.awaitHeartbeats(w, w.sessions, 60*time.Second)
	}
	if err != nil {
		_ = s.stop()
		return nil, err
	}
	return s, nil
}

// loadPhase measures one server on one session: each steady rate, then the
// burst; it returns a row for each load measured.
func loadPhase(cfg config, srv, dir string) (rows []row, err error) {
	w, err := newWorld(dir, 1)
	if err != nil {
		return nil, err
	}
	defer w.remove()
	s, err := start(cfg, srv, w, true)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := s.stop(); err == nil && serr != nil {
			err = fmt.Errorf("stop: %w", serr)
		}
	}()
	g, err := newGen(w.layout, w.sessions[0])
	if err != nil {
		return nil, err
	}
	defer g.close()

	measure := func(label string, send func() (int, error)) error {
		cpu0, err := s.cpu()
		if err != nil {
			return err
		}
		t0 := time.Now()
		n, err := send()
		if err != nil {
			return err
		}
		left := g.wait(time.Minute)
		cpu1, err := s.cpu()
		if err != nil {
			return err
		}
		st := g.reset()
		if err := st.check(n, left); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		r := row{server: srv, load: label, answered: st.n, p99: st.p99, drain: st.last.Sub(t0), cpu: cpu1 - cpu0}
		rows = append(rows, r)
		fmt.Fprintf(cfg.out, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", srv, label, st.n,
			us(st.p50), us(st.p99), us(st.max), ms(r.drain), us(r.cpuPerAnswer()))
		return nil
	}
	for _, rate := range cfg.rates {
		err := measure(fmt.Sprintf("%d/s for %s", rate, cfg.steadyFor), func() (int, error) {
			return g.steady(rate, cfg.steadyFor)
		})
		if err != nil {
			return rows, err
		}
	}
	if cfg.burst > 0 {
		err = measure(fmt.Sprintf("burst of %d", cfg.burst), func() (int, error) {
			return cfg.burst, g.burst(cfg.burst)
		})
	}
	return rows, err
}

// idlePhase: n discovered sessions, none asking; then a probe stream into
// one of them.
func idlePhase(cfg config, srv, dir string, n int) (err error) {
	w, err := newWorld(dir, n)
	if err != nil {
		return err
	}
	defer w.remove()
	s, err := start(cfg, srv, w, false)
	if err != nil {
		return err
	}
	defer func() {
		if serr := s.stop(); err == nil && serr != nil {
			err = fmt.Errorf("stop: %w", serr)
		}
	}()
	time.Sleep(2 * time.Second) // startup work is not idle cost
	cpu0, err := s.cpu()
	if err != nil {
		return err
	}
	t0 := time.Now()
	var oldest time.Duration
	for time.Since(t0) < cfg.idleFor {
		time.Sleep(500 * time.Millisecond)
		if age, err := oldestHeartbeat(w); err != nil {
			return err
		} else if age > oldest {
			oldest = age
		}
	}
	cpu1, err := s.cpu()
	if err != nil {
		return err
	}
	busy := float64(cpu1-cpu0) / float64(time.Since(t0)) * 100

	g, err := newGen(w.layout, w.sessions[0])
	if err != nil {
		return err
	}
	defer g.close()
	sent, err := g.steady(cfg.probeRate, cfg.probeFor)
	if err != nil {
		return err
	}
	left := g.wait(time.Minute)
	st := g.reset()
	if err := st.check(sent, left); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	fmt.Fprintf(cfg.out, "| %s | %d | %.1f %% | %s | %s | %s |\n", srv, n, busy, ms(oldest), us(st.p50), us(st.p99))
	return nil
}

// oldestHeartbeat is the age of the stalest heartbeat of the world's
// sessions; a missing one is an error (a child would abandon).
func oldestHeartbeat(w *world) (time.Duration, error) {
	now := time.Now().UnixMilli()
	var oldest int64
	for _, id := range w.sessions {
		hb, ok := readHeartbeat(w, id)
		if !ok {
			return 0, fmt.Errorf("no readable heartbeat for %s", id)
		}
		oldest = max(oldest, now-hb.UpdatedAt)
	}
	return time.Duration(oldest) * time.Millisecond, nil
}

func us(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
