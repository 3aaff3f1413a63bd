package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/permtui/permtui/internal/wire"
)

var (
	// ErrWithdrawn: the request file is gone (the child gave up or timed
	// out); nothing was written.
	ErrWithdrawn = errors.New("inbox: request withdrawn")
	// ErrNotInFlight: the path is not a delivered, unanswered request.
	ErrNotInFlight = errors.New("inbox: request not in flight")
	// ErrBusy: another response write for the request is in progress.
	ErrBusy = errors.New("inbox: response write in progress")
)

// Present reports whether a delivered request's file still exists.
func (in *Inbox) Present(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Respond answers a delivered request: it checks the request still exists,
// writes responses/<id>.json atomically, then deletes the request. On a
// write error the request is kept in flight (never delivered again) so the
// caller can retry without asking a person twice. ErrWithdrawn means the
// request vanished and nothing was written; the entry is then forgotten.
func (in *Inbox) Respond(path string, resp wire.Response) error {
	in.mu.Lock()
	e := in.inflight[path]
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

	if !in.Present(path) {
		in.mu.Lock()
		delete(in.inflight, path)
		in.mu.Unlock()
		return ErrWithdrawn
	}
	if err := in.writeResponse(e.session, e.id, resp); err != nil {
		in.mu.Lock()
		e.answering = false
		in.mu.Unlock()
		return err
	}
	in.mu.Lock()
	e.answering, e.answered = false, true
	in.mu.Unlock()

	// The child may already have consumed the response and removed the
	// request; that is success too.
	err := os.Remove(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		in.mu.Lock()
		delete(in.inflight, path)
		in.mu.Unlock()
		return nil
	}
	// The answered entry stays until the file is gone, so the request is
	// not delivered again.
	in.cfg.Logger.Warn("remove answered request", "path", path, "err", err)
	return nil
}

func (in *Inbox) writeResponse(session, id string, resp wire.Response) error {
	data, err := wire.MarshalResponse(resp)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	dir := in.cfg.Layout.ResponsesDir(session)
	if err := wire.MkdirPrivate(dir); err != nil {
		return fmt.Errorf("prepare responses/: %w", err)
	}
	// A symlinked responses/ would lead the write out of the inbox.
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("prepare responses/: %s is not a directory", dir)
	}
	if err := wire.WriteFileAtomic(in.cfg.Layout.ResponsePath(session, id), data); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}
