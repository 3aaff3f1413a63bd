package serve

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/wire"
)

// AuditRecord is one line of <StateDir>/audit.jsonl: a decision, made
// durable before its response is written.
type AuditRecord struct {
	AskID             AskID                `json:"askId"` // the delivery decided; unique within one permtui process
	RequestID         string               `json:"requestId"`
	ServedSession     string               `json:"servedSession"`
	RequesterSession  string               `json:"requesterSession"`
	Agent             string               `json:"agent"`
	Surface           string               `json:"surface"`
	MatchValues       []string             `json:"matchValues,omitempty"`
	State             wire.State           `json:"state"` // as decided; approved_for_serving_session is answered approved
	Approved          bool                 `json:"approved"`
	DecidedBy         *wire.DecisionSource `json:"decidedBy,omitempty"`
	Reason            string               `json:"reason,omitempty"`
	Grants            []wire.Grant         `json:"grants,omitempty"` // whole-session grants recorded by this decision
	SessionGrantWidth string               `json:"sessionGrantWidth,omitempty"`
	CreatedAt         float64              `json:"createdAt"` // the request's, ms epoch
	DecidedAt         int64                `json:"decidedAt"` // ms epoch
	Auto              bool                 `json:"auto"`
}

// errAuditClosed: the audit log was closed (the server stopped).
var errAuditClosed = errors.New("audit log closed")

// auditLog appends records with group commit: one writer goroutine takes
// every record queued while the previous fsync ran and makes the whole batch
// durable with one write and one fsync.
type auditLog struct {
	path  string
	queue chan auditEntry
	done  chan struct{}
	stop  chan struct{}
	file  *os.File
	syncs atomic.Int64 // fsyncs done, for benchmarks
}

type auditEntry struct {
	line []byte
	errc chan error
}

func newAuditLog(stateDir string) *auditLog {
	l := &auditLog{
		path:  filepath.Join(stateDir, "audit.jsonl"),
		queue: make(chan auditEntry, 256),
		done:  make(chan struct{}),
		stop:  make(chan struct{}),
	}
	go l.writer()
	return l
}

// append returns once rec is on stable storage, or with the reason it is not.
func (l *auditLog) append(rec AuditRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	e := auditEntry{line: append(line, '\n'), errc: make(chan error, 1)}
	select {
	case l.queue <- e:
	case <-l.stop:
		return errAuditClosed
	}
	select {
	case err := <-e.errc:
		return err
	case <-l.done:
		select {
		case err := <-e.errc: // committed just before the writer stopped
			return err
		default:
			return errAuditClosed
		}
	}
}

// close stops the writer after the batch in progress; later appends fail.
func (l *auditLog) close() {
	close(l.stop)
	<-l.done
	if l.file != nil {
		_ = l.file.Close()
	}
}

func (l *auditLog) writer() {
	defer close(l.done)
	for {
		var first auditEntry
		select {
		case first = <-l.queue:
		case <-l.stop:
			return
		}
		batch := []auditEntry{first}
	drain:
		for {
			select {
			case e := <-l.queue:
				batch = append(batch, e)
			default:
				break drain
			}
		}
		err := l.commit(batch)
		for _, e := range batch {
			e.errc <- err
		}
	}
}

func (l *auditLog) commit(batch []auditEntry) error {
	if l.file == nil {
		if err := wire.MkdirPrivate(filepath.Dir(l.path)); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		l.file = f
	}
	var buf bytes.Buffer
	for _, e := range batch {
		buf.Write(e.line)
	}
	st, err := l.file.Stat()
	if err == nil {
		_, err = l.file.Write(buf.Bytes())
		if err == nil {
			err = l.file.Sync()
			l.syncs.Add(1)
		}
		if err != nil {
			// Cut a partial batch off so the log stays line-valid.
			_ = l.file.Truncate(st.Size())
		}
	}
	if err != nil {
		_ = l.file.Close()
		l.file = nil // reopened on the next batch
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}
