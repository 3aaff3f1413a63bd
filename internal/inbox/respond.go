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
	// ErrAnswerUnread: responses/<id>.json still holds an answer its child
	// has not taken; it is never replaced, so nothing was written and the
	// request is kept in flight.
	ErrAnswerUnread = errors.New("inbox: an earlier answer to this request id is still unread")
)

// Present reports whether the delivery id is still in flight and its file
// is still in the session's requests/ (the same file, not a replacement).
func (in *Inbox) Present(id AskID) bool {
	in.mu.Lock()
	e := in.byID[id]
	in.mu.Unlock()
	return e != nil && in.present(e)
}

// present reports whether e's file is still in its session's requests/; a
// requests/ that cannot be opened holds nothing.
func (in *Inbox) present(e *entry) bool {
	d, _, err := in.acquireDirs(e.session)
	if err != nil {
		return false
	}
	defer in.releaseDirs(d)
	return e.stillThere(d.reqs)
}

// Respond answers the delivery id: it checks the request file is still
// there, writes responses/<id>.json atomically, never over an answer still
// there (ErrAnswerUnread), then deletes the request. All of it goes through
// directories opened without following symlinks, so nothing outside the
// inbox is written or deleted. On a write
// error the request is kept in flight (never delivered again) so the caller
// can retry without asking a person twice, or hand it back with Postpone.
// ErrWithdrawn means the request vanished or was replaced by another file
// (or is no longer a real file in a real requests/) and nothing was
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
	in.judged(e)
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
		in.answered(e)
	default:
		in.drop(e)
	}
	return err
}

// Refuse lets go of the delivery id without answering it: its file, if
// still the one delivered, is removed, and it is reported Invalid with
// reason, so it is neither answered nor delivered again.
func (in *Inbox) Refuse(id AskID, reason string) error {
	in.mu.Lock()
	e := in.byID[id]
	if e == nil || e.answered || e.answering {
		in.mu.Unlock()
		return ErrNotInFlight
	}
	e.answering = true // its file going is not a withdrawal
	in.mu.Unlock()

	d, _, err := in.acquireDirs(e.session)
	if err == nil {
		if e.stillThere(d.reqs) {
			in.refuse(e.session, d.reqs, e.name, reason, true)
		}
		in.releaseDirs(d)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	e.answering = false
	in.drop(e)
	if err != nil {
		return fmt.Errorf("refuse %s: open requests/: %w", e.path, err)
	}
	return nil
}

// respond writes the response and deletes the request; removed reports
// that the request file is gone afterwards.
func (in *Inbox) respond(e *entry, resp wire.Response) (removed bool, err error) {
	data, err := wire.MarshalResponse(resp)
	if err != nil {
		return false, fmt.Errorf("encode response: %w", err)
	}
	// A cached directory a child's cleanup removed (wire-protocol §2.5) is
	// reopened once.
	for attempt := 0; ; attempt++ {
		removed, stale, err := in.respondIn(e, data)
		if stale == nil {
			return removed, err
		}
		in.invalidate(e.session, stale)
		if attempt == 1 {
			return false, err
		}
	}
}

// staleIf is d when err says one of its cached directories was deleted.
func staleIf(d *dirs, err error) *dirs {
	if errors.Is(err, fs.ErrNotExist) {
		return d
	}
	return nil
}

// respondIn is one attempt of respond; stale is the cached set it found
// deleted, when a retry through the reopened path may succeed.
func (in *Inbox) respondIn(e *entry, data []byte) (removed bool, stale *dirs, err error) {
	d, _, err := in.acquireDirs(e.session)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefs.ErrNotDir) {
		return false, nil, ErrWithdrawn
	}
	if err != nil {
		return false, nil, fmt.Errorf("open requests/: %w", err)
	}
	defer in.releaseDirs(d)
	if !e.stillThere(d.reqs) {
		return false, nil, ErrWithdrawn
	}
	respDir, err := in.responses(d)
	if err != nil {
		return false, staleIf(d, err), fmt.Errorf("prepare responses/: %w", err)
	}
	// Another request under the same id may have been answered and its
	// child not have read it yet: replacing that answer would hand the
	// child this one (decision 0201).
	err = respDir.WriteFileNew(e.reqID+".json", data)
	if errors.Is(err, fs.ErrExist) {
		return false, nil, ErrAnswerUnread
	}
	if err != nil {
		return false, staleIf(d, err), fmt.Errorf("write response: %w", err)
	}
	// The child may already have consumed the response and removed the
	// request; that is success too.
	if err := d.reqs.Remove(e.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		in.cfg.Logger.Warn("remove answered request", "dir", d.reqs.Path(), "name", e.name, "err", err)
		return false, nil, nil
	}
	return true, nil, nil
}
