package status

import (
	"cmp"
	"io"
	"log/slog"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
)

// Options says where Run writes.
type Options struct {
	Detail Detail
	// Lines, when not nil, gets one JSON line per change.
	Lines io.Writer
	// File, when not empty, keeps the Summary, rewritten atomically (0600)
	// when it changes.
	File string
	// Heartbeat is how often File is written again while nothing changes
	// (default HeartbeatEvery).
	Heartbeat time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
}

// HeartbeatEvery is how often the status file is rewritten while serving,
// so a file older than a few of these is a line a killed permtui left
// behind (decision 0197).
const HeartbeatEvery = 10 * time.Second

// StoppedSummary is the status file once serving stopped.
const StoppedSummary = "⏹ permtui stopped"

// Run follows one subscription until it closes, which is when serving
// stopped; then the file says so and the lines end with a Stopped line. A
// failed write is logged and the next change or heartbeat tries again: a
// full disk or a removed directory never stops serving.
func Run(events <-chan serve.Event, o Options) {
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	if o.Heartbeat <= 0 {
		o.Heartbeat = HeartbeatEvery
	}
	t := NewTracker(o.Detail)
	shown, written, failing := "", false, false
	// show writes s when it is news or again is set. A failure is logged
	// once until a write works again, not at every beat.
	show := func(s string, again bool) {
		if o.File == "" || (s == shown && written && !again) {
			return
		}
		if err := safefs.WriteFileAtomic(o.File, []byte(s+"\n")); err != nil {
			if !failing {
				o.Logger.Warn("status file not written", "file", o.File, "err", err)
			}
			failing = true
			return
		}
		if failing {
			o.Logger.Info("status file written again", "file", o.File)
		}
		shown, written, failing = s, true, false
	}
	emit := func(l Line) {
		if o.Lines == nil {
			return
		}
		data, err := EncodeLine(l)
		if err == nil {
			_, err = o.Lines.Write(data)
		}
		if err != nil {
			o.Logger.Warn("events line not written", "err", err)
		}
	}
	show(t.Summary(), false) // a status bar reads the file from the start
	var beat <-chan time.Time
	if o.File != "" {
		tick := time.NewTicker(o.Heartbeat)
		defer tick.Stop()
		beat = tick.C
	}
	for {
		select {
		case ev, open := <-events:
			if !open {
				// Serving stopped: a reader must not go on believing
				// asks wait, or that nothing does.
				emit(t.line(Stopped, serve.Ask{}, "", o.Now()))
				show(StoppedSummary, false)
				return
			}
			if l, ok := t.Apply(ev, o.Now()); ok {
				emit(l)
				show(t.Summary(), false)
			}
		case <-beat:
			show(t.Summary(), true)
		}
	}
}

// EncodeLine is l as one JSON line, with what a terminal must not see as
// is escaped (decision 0110).
func EncodeLine(l Line) ([]byte, error) {
	data, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	return append(termsafe.EscapeJSON(data), '\n'), nil
}
