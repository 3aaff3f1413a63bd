package inbox

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

var (
	// ErrWithdrawn: the request file is gone (the child gave up or timed
	// out); nothing was written.
	ErrWithdrawn = errors.New("inbox: request withdrawn")
	// ErrNotInFlight: the AskID names no delivered, unanswered request (a
	// later request under the same file name is a different ask).
	ErrNotInFlight = errors.New("inbox: request not in flight")
	// ErrBusy: another response write for the request is in progress.
	ErrBusy = errors.New("inbox: response write in progress")
)

// Present reports whether the delivery id is still in flight and its file
// is still a regular file in the session's requests/.
func (in *Inbox) Present(id AskID) bool {
	in.mu.Lock()
	e := in.byID[id]
	in.mu.Unlock()
	if e == nil {
		return false
	}
	sess, reqDir, err := in.openRequests(e.session)
	if err != nil {
		return false
	}
	defer sess.Close()
	defer reqDir.Close()
	return isRegular(reqDir, e.name)
}

// openRequests opens the session root and its requests/ without following
// symlinks.
func (in *Inbox) openRequests(session string) (sess, reqDir *safefs.Dir, err error) {
	sess, err = safefs.OpenDir(in.cfg.Layout.Root, "sessions", wire.EncodeSegment(session))
	if err != nil {
		return nil, nil, err
	}
	if reqDir, err = sess.Open("requests"); err != nil {
		sess.Close()
		return nil, nil, err
	}
	return sess, reqDir, nil
}

// Respond answers the delivery id: it checks the request
// file is still there, writes responses/<id>.json atomically, then deletes
// the request. All of it goes through directories opened without following
// symlinks, so nothing outside the inbox is written or deleted. On a write
// error the request is kept in flight (never delivered again) so the caller
// can retry without asking a person twice. ErrWithdrawn means the request
// vanished (or is no longer a real file in a real requests/) and nothing was
// written; the entry is then forgotten.
func (in *Inbox) Respond(id AskID, resp wire.Response) error {
	in.mu.Lock()
	e := in.byID[id]
	switch {
	case e == nil || e.answered:
		in.mu.Unlock()
		return ErrNotInFlight
	case e.answering:
		in.mu.Unlock()
		return ErrBusy
	}
	e.answering = true
	in.mu.Unlock()

	removed, err := in.respond(e, resp)
	in.mu.Lock()
	defer in.mu.Unlock()
	e.answering = false
	switch {
	case err != nil && !errors.Is(err, ErrWithdrawn):
		// Kept in flight for the caller's retry.
	case err == nil && !removed:
		// Kept until the file is gone, so it is not delivered again.
		e.answered = true
	default:
		in.drop(e)
	}
	return err
}

// respond writes the response and deletes the request; removed reports
// that the request file is gone afterwards.
func (in *Inbox) respond(e *entry, resp wire.Response) (removed bool, err error) {
	data, err := wire.MarshalResponse(resp)
	if err != nil {
		return false, fmt.Errorf("encode response: %w", err)
	}
	sess, reqDir, err := in.openRequests(e.session)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefs.ErrNotDir) {
		return false, ErrWithdrawn
	}
	if err != nil {
		return false, fmt.Errorf("open requests/: %w", err)
	}
	defer sess.Close()
	defer reqDir.Close()
	if !isRegular(reqDir, e.name) {
		return false, ErrWithdrawn
	}
	// pi recreates responses/ defensively before answering (#398).
	respDir, err := sess.OpenPrivate("responses")
	if err != nil {
		return false, fmt.Errorf("prepare responses/: %w", err)
	}
	defer respDir.Close()
	if err := respDir.WriteFileAtomic(e.reqID+".json", data); err != nil {
		return false, fmt.Errorf("write response: %w", err)
	}
	// The child may already have consumed the response and removed the
	// request; that is success too.
	if err := reqDir.Remove(e.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		in.cfg.Logger.Warn("remove answered request", "dir", reqDir.Path(), "name", e.name, "err", err)
		return false, nil
	}
	return true, nil
}
