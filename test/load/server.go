package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/permtui/permtui/internal/wire"
)

// server is a serving process under test: permtui or the minimal responder.
type server struct {
	name string
	cmd  *exec.Cmd
	exit chan error
}

// startServer runs argv with the world's inboxes. sessions nil means
// discovery (every session directory).
func startServer(name string, argv []string) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = devnull, os.Stderr
	if err := cmd.Start(); err != nil {
		devnull.Close()
		return nil, err
	}
	s := &server{name: name, cmd: cmd, exit: make(chan error, 1)}
	go func() { s.exit <- cmd.Wait(); devnull.Close() }()
	return s, nil
}

func permtuiArgs(bin string, w *world, sessions []string) []string {
	argv := []string{bin, "serve", "--headless", "--agent-dir", w.agentDir, "--state-dir", w.stateDir, "--project", w.project}
	for _, id := range sessions {
		argv = append(argv, "--session", id)
	}
	return argv
}

func minimalArgs(w *world) []string {
	return []string{"-root", w.layout.Root}
}

// cpu is the process's user + system CPU time so far (all threads).
func (s *server) cpu() (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, utime 14 and stime 15, in clock ticks of 10 ms.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
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

// stop ends the server as a terminal would (SIGTERM) and waits for it.
func (s *server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exit:
		return err
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within 10 s", s.name)
	}
}
