// Package pichild is a Go pi child: it writes forwarded permission requests
// exactly as @gotgenes/pi-permission-system does and waits for the answer
// (wire-protocol §3, §6.1, §7.3-7.4). It exists for tests and the demo.
package pichild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// Defaults of pi's child.
const (
	DefaultPoll    = 250 * time.Millisecond
	DefaultTimeout = 10 * time.Minute // forwardingTimeoutMs
	// AbandonAfter is how long the target may look "not serving" before a
	// v26.2+ env child gives up (8 polls of 250 ms).
	AbandonAfter = 2000 * time.Millisecond
)

// Child asks one served session for decisions, as an out-of-process (env
// target) child does.
type Child struct {
	Layout  wire.Layout
	Target  string        // served session id it forwards to
	PID     int           // pid written into minted request ids; default os.Getpid()
	Poll    time.Duration // default DefaultPoll
	Timeout time.Duration // default DefaultTimeout
	// Liveness turns on the newest behaviour: abandon after AbandonAfter of
	// a heartbeat that is not alive. Off, the child behaves like 20.7.3 and
	// waits out the timeout.
	Liveness bool
	// RemoveEmptyDirs runs pi's empty-directory cleanup (§2.5) after each
	// ask. Off by default: concurrent children of one session race on it
	// exactly as pi's do, which would make tests and the demo flaky.
	RemoveEmptyDirs bool
	Now             func() time.Time // default time.Now
}

// Outcome is how an ask ended.
type Outcome string

const (
	Answered    Outcome = "answered"     // a readable response arrived
	Unreadable  Outcome = "unreadable"   // a response arrived but the child cannot read it: deny
	Abandoned   Outcome = "abandoned"    // no live server for AbandonAfter
	TimedOut    Outcome = "timeout"      // no answer before Timeout
	WriteFailed Outcome = "write_failed" // the directories or the request could not be written
)

// Result of an ask. Response is set only when Outcome is Answered; Raw holds
// the response file's bytes whenever one was read.
type Result struct {
	Outcome   Outcome
	Response  *wire.ChildResponse
	Raw       []byte
	RequestID string
}

// NewRequestID mints "<ms>-<base36 random, up to 8 chars>-<pid>" like
// Math.random().toString(36).slice(2, 10): the random part may be shorter.
func NewRequestID(now time.Time, pid int) string {
	random := strconv.FormatUint(rand.Uint64N(36*36*36*36*36*36*36*36), 36)
	return fmt.Sprintf("%d-%s-%d", now.UnixMilli(), random, pid)
}

func (c *Child) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Ask writes req (minting an id if it has none) into the target's inbox and
// waits for the answer, following pi's child sequence (§6.1). The error is
// non-nil only for a target that is no id, a request MarshalRequest refuses,
// or a cancelled ctx; the request file is removed in the last case.
func (c *Child) Ask(ctx context.Context, req *wire.Request) (Result, error) {
	target, ok := wire.NormalizeSessionID(c.Target)
	if !ok {
		return Result{}, errors.New("could not resolve a parent session to forward this permission request to")
	}
	r := *req
	if r.ID == "" {
		r.ID = NewRequestID(c.now(), cmp.Or(c.PID, os.Getpid()))
	}
	res := Result{RequestID: r.ID}
	data, err := wire.MarshalRequest(&r)
	if err != nil {
		return res, err
	}
	if !c.post(target, r.ID, data) {
		res.Outcome = WriteFailed
		return res, nil
	}
	outcome, err := c.await(ctx, target, &res)
	// The request is withdrawn whatever the outcome.
	_ = syscall.Unlink(c.Layout.RequestPath(target, r.ID))
	c.cleanup(target)
	if err != nil {
		return res, err
	}
	res.Outcome = outcome
	return res, nil
}

// post writes the request file into the target's inbox, making its
// directories; false when it could not.
func (c *Child) post(target, id string, data []byte) bool {
	l := c.Layout
	for _, dir := range []string{l.SessionDir(target), l.RequestsDir(target), l.ResponsesDir(target)} {
		if err := safefs.MkdirPrivate(dir); err != nil {
			return false
		}
	}
	if err := safefs.WriteFileAtomic(l.RequestPath(target, id), data); err != nil {
		c.cleanup(target)
		return false
	}
	return true
}

// await polls for the response to res.RequestID until it comes (res.Raw and
// res.Response filled), the parent stops serving, the timeout passes or
// ctx is cancelled (the error).
func (c *Child) await(ctx context.Context, target string, res *Result) (Outcome, error) {
	l := c.Layout
	responsePath := l.ResponsePath(target, res.RequestID)
	deadline := c.now().Add(cmp.Or(c.Timeout, DefaultTimeout))
	var notServingSince time.Time
	ticker := time.NewTicker(cmp.Or(c.Poll, DefaultPoll))
	defer ticker.Stop()
	for {
		if _, err := os.Lstat(responsePath); err == nil {
			// Read once, then delete both files whatever the content
			// (unlink only: a directory in their place is never removed).
			raw, readErr := safefs.ReadRegularFile(responsePath, wire.MaxFileSize)
			_ = syscall.Unlink(responsePath)
			res.Raw = raw
			if readErr == nil {
				if cr, err := wire.ReadResponseAsChild(raw); err == nil {
					res.Response = cr
					return Answered, nil
				}
			}
			return Unreadable, nil
		}
		now := c.now()
		if c.Liveness {
			if readLiveness(l.HeartbeatPath(target), now) == wire.LivenessAlive {
				notServingSince = time.Time{}
			} else if notServingSince.IsZero() {
				notServingSince = now
			} else if now.Sub(notServingSince) >= AbandonAfter {
				return Abandoned, nil
			}
		}
		if !now.Before(deadline) {
			return TimedOut, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-ticker.C:
		}
	}
}

// cleanup is pi's "remove if empty" pass (§2.5), when enabled: requests/,
// then responses/ only if requests/ is gone, then the session root. rmdir
// never removes a non-empty directory.
func (c *Child) cleanup(target string) {
	if !c.RemoveEmptyDirs {
		return
	}
	gone := func(dir string) bool {
		err := syscall.Rmdir(dir)
		return err == nil || errors.Is(err, syscall.ENOENT)
	}
	if gone(c.Layout.RequestsDir(target)) {
		gone(c.Layout.ResponsesDir(target))
	}
	gone(c.Layout.SessionDir(target))
}

// readLiveness reads and classifies the heartbeat file at path the way a
// child does: unreadable or unusable counts as absent.
func readLiveness(path string, now time.Time) wire.Liveness {
	data, err := safefs.ReadRegularFile(path, wire.MaxFileSize)
	if err != nil {
		return wire.LivenessAbsent
	}
	h, err := wire.ParseHeartbeat(data)
	if err != nil {
		return wire.LivenessAbsent
	}
	return wire.ClassifyHeartbeat(h, now, safefs.PIDAlive)
}
