package main

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/notify"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/status"
)

// awayFlags choose what permtui tells a person away from the console
// (decision 0181).
type awayFlags struct {
	events     string
	statusFile string
	detail     string
	notifyCmd  string
	ntfy       string
	expiring   time.Duration
}

func (f *awayFlags) register(fs flagSet) {
	fs.StringVar(&f.events, "events", "", "append one JSON line per change (agent blocked or unblocked, waiting counts, decisions by kind) to this file (0600)")
	fs.StringVar(&f.statusFile, "status-file", "", "keep a one-line summary of the waiting asks in this file, for a tmux status line")
	fs.StringVar(&f.detail, "detail", string(status.Counts), "what --events and the notifiers carry: counts (no command text, values or paths) or full")
	fs.StringVar(&f.notifyCmd, "notify-cmd", "", "run this shell command for each new ask and each ask about to expire, the event as JSON on stdin")
	fs.StringVar(&f.ntfy, "ntfy", "", "publish each new ask to this ntfy topic URL (e.g. https://ntfy.sh/mytopic; a token in $PERMTUI_NTFY_TOKEN)")
	fs.DurationVar(&f.expiring, "notify-expiring", notify.DefaultExpiring, "notify again when an ask still waits this long after it arrived (children give up after 10m by default)")
}

func (f *awayFlags) check(fs flagSet, overHub bool) error {
	if _, err := status.ParseDetail(f.detail); err != nil {
		fmt.Fprintln(fs.Output(), err)
		return errUsage
	}
	if err := notify.Check(notify.Options{Ntfy: f.ntfy}); err != nil {
		fmt.Fprintln(fs.Output(), err)
		return errUsage
	}
	if overHub && f.any() {
		fmt.Fprintln(fs.Output(), "--events, --status-file, --notify-cmd and --ntfy serve this host's inbox; they are not available with --hub yet")
		return errUsage
	}
	return nil
}

func (f awayFlags) any() bool {
	return f.events != "" || f.statusFile != "" || f.notifyCmd != "" || f.ntfy != ""
}

// subscriber is a serving loop that takes more subscribers (*serve.Server).
type subscriber interface {
	Subscribe() (<-chan serve.Event, func())
}

// startAway subscribes the away outputs before the server runs, so they
// miss nothing; wait returns once they have written the last event, after
// the server's Run returned.
func startAway(srv subscriber, f awayFlags, logger *slog.Logger) (wait func(), err error) {
	var running sync.WaitGroup
	if f.notifyCmd != "" || f.ntfy != "" {
		o := notify.Options{
			Detail: status.Detail(f.detail), Command: f.notifyCmd, Ntfy: f.ntfy, NtfyToken: os.Getenv("PERMTUI_NTFY_TOKEN"),
			Expiring: f.expiring, Logger: logger,
		}
		events, _ := srv.Subscribe() // read to the end
		running.Go(func() { notify.Run(events, o) })
	}
	if f.events == "" && f.statusFile == "" {
		return running.Wait, nil
	}
	o := status.Options{File: f.statusFile, Detail: status.Detail(f.detail), Logger: logger}
	var lines *os.File
	if f.events != "" {
		if lines, err = os.OpenFile(f.events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
		o.Lines = lines
	}
	events, _ := srv.Subscribe() // read to the end
	running.Go(func() {
		status.Run(events, o)
		if lines != nil {
			lines.Close()
		}
	})
	return running.Wait, nil
}
