package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/permtui/permtui/internal/wire"
)

// server is a serving process under test: permtui, the minimal responder or
// pi's node. It runs in a process group of its own, since pi's node is a
// shell script starting tsx starting node.
type server struct {
	name   string
	cmd    *exec.Cmd
	exit   chan error
	stderr io.Reader // set by startServer when asked for (pi's readiness line)
}

// startServer runs argv; with pipeStderr the caller reads s.stderr,
// otherwise it goes to this process's stderr.
func startServer(name string, argv []string, pipeStderr bool) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, exit: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = devnull, os.Stderr
	if pipeStderr {
		cmd.Stderr = nil
		if s.stderr, err = cmd.StderrPipe(); err != nil {
			devnull.Close()
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		devnull.Close()
		return nil, err
	}
	go func() { s.exit <- cmd.Wait(); devnull.Close() }()
	return s, nil
}

func permtuiArgs(bin string, w *world, sessions []string) []string {
	argv := []string{bin, "serve", "--headless", "--agent-dir", w.agentDir, "--state-dir", w.stateDir, "--project", childCwd}
	for _, id := range sessions {
		argv = append(argv, "--session", id)
	}
	return argv
}

func minimalArgs(w *world) []string {
	return []string{"-root", w.layout.Root}
}

// cpu is the user + system CPU time so far of the server and every process
// it started (all threads): pi's node runs in a child of tsx.
func (s *server) cpu() (time.Duration, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	type proc struct {
		parent int
		ticks  int64
	}
	all := map[int]proc{}
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parent, ticks, err := procStat(pid); err == nil {
			all[pid] = proc{parent, ticks}
		}
	}
	root := s.cmd.Process.Pid
	if _, ok := all[root]; !ok {
		return 0, fmt.Errorf("%s (pid %d) is gone", s.name, root)
	}
	var ticks int64
	for pid, p := range all {
		for up := pid; ; up = all[up].parent {
			if up == root {
				ticks += p.ticks
				break
			}
			if _, ok := all[up]; !ok || up <= 1 {
				break
			}
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// procStat reads a process's parent and its utime + stime in clock ticks
// of 10 ms. Fields after the command name (which may hold spaces): state
// is field 3, ppid 4, utime 14 and stime 15.
func procStat(pid int) (parent int, ticks int64, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, 0, errors.New("short /proc stat")
	}
	parent, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return parent, ut + st, nil
}

// awaitHeartbeats waits until every session has a heartbeat naming the
// server's pid: then it serves them.
func (s *server) awaitHeartbeats(w *world, sessions []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, id := range sessions {
		for {
			if hb, ok := readHeartbeat(w, id); ok && hb.PID == s.cmd.Process.Pid {
				break
			}
			select {
			case err := <-s.exit:
				s.exit <- err
				return fmt.Errorf("%s exited: %v", s.name, err)
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: no heartbeat for %s after %s", s.name, id, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func readHeartbeat(w *world, id string) (wire.Heartbeat, bool) {
	data, err := os.ReadFile(w.layout.HeartbeatPath(id))
	if err != nil {
		return wire.Heartbeat{}, false
	}
	hb, err := wire.ParseHeartbeat(data)
	return hb, err == nil
}

// stop ends the server's process group as a terminal would (SIGTERM) and
// waits for it. pi's node is a shell script running tsx running node, and
// every one of them gets the signal: which ends first decides whether the
// script exits 0 or 143 (128 + SIGTERM), so for pi both are a stop.
func (s *server) stop() error {
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case err := <-s.exit:
		var exit *exec.ExitError
		if s.name == "pi" && errors.As(err, &exit) && exit.ExitCode() == 128+int(syscall.SIGTERM) {
			return nil
		}
		return err
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		return fmt.Errorf("%s did not stop within 10 s", s.name)
	}
}
