package status

import (
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
	File   string
	Logger *slog.Logger
	Now    func() time.Time
}

// Run follows one subscription until it closes. A failed write is logged
// and the next change tries again: a full disk or a removed directory
// never stops serving.
func Run(events <-chan serve.Event, o Options) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := NewTracker(o.Detail)
	shown, written := "", false
	summarize := func() {
		if s := t.Summary(); o.File != "" && (s != shown || !written) {
			if err := safefs.WriteFileAtomic(o.File, []byte(s+"\n")); err != nil {
				o.Logger.Warn("status file not written", "file", o.File, "err", err)
				return
			}
			shown, written = s, true
		}
	}
	summarize() // a status bar reads the file from the start
	for ev := range events {
		l, ok := t.Apply(ev, o.Now())
		if !ok {
			continue
		}
		if o.Lines != nil {
			data, err := EncodeLine(l)
			if err == nil {
				_, err = o.Lines.Write(data)
			}
			if err != nil {
				o.Logger.Warn("events line not written", "err", err)
			}
		}
		summarize()
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
