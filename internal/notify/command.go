package notify

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/permtui/permtui/internal/status"
)

// command runs the person's --notify-cmd, at most Parallel at a time; a
// line while all run is refused, for the rate to count (decision 0184).
type command struct {
	cmd     string
	timeout time.Duration
	slots   chan struct{}
	log     *slog.Logger
	ready   func()
	running sync.WaitGroup
}

func newCommand(o Options, ready func()) *command {
	return &command{cmd: o.Command, timeout: o.Timeout, slots: make(chan struct{}, o.Parallel), log: o.Logger, ready: ready}
}

func (c *command) deliver(l status.Line) bool {
	line, err := status.EncodeLine(l)
	if err != nil {
		c.log.Warn("notify-cmd not run", "ask", l.Ask, "err", err)
		return true // no later try would encode it
	}
	select {
	case c.slots <- struct{}{}:
	default:
		c.log.Warn("notify-cmd busy: the ask is counted into the next run", "ask", l.Ask, "event", l.Event, "slots", cap(c.slots))
		return false
	}
	c.running.Go(func() {
		c.run(l, line)
		<-c.slots
		c.ready()
	})
	return true
}

// run runs the command in its own process group, so its end or its
// timeout kills what it started too, with permtui's secrets out of its
// environment.
func (c *command) run(l status.Line, stdin []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.cmd)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, TokenEnv+"=") })
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a grandchild holding stdin open
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left in the background
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		c.log.Warn("notify-cmd killed after its timeout", "ask", l.Ask, "event", l.Event, "timeout", c.timeout)
	case errors.As(err, &exit):
		c.log.Warn("notify-cmd failed", "ask", l.Ask, "event", l.Event, "exit", exit.ExitCode(), "took", took)
	case err != nil:
		c.log.Warn("notify-cmd failed", "ask", l.Ask, "event", l.Event, "err", err)
	default:
		c.log.Info("notify-cmd ran", "ask", l.Ask, "event", l.Event, "took", took)
	}
}

func (c *command) wait()  { c.running.Wait() }
func (c *command) close() { c.running.Wait() }
