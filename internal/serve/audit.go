package serve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// AuditRecord is one line of <StateDir>/audit.jsonl: a decision, made
// durable before its response is written.
type AuditRecord struct {
	// Kind is "" for a decision, AuditExpired for an ask the child
	// stopped waiting for before a person decided, and AuditRevoked for a
	// whole-session grant or session deny revoked (no decisions: replay and
	// simulate pass such lines over).
	Kind              string               `json:"kind,omitempty"`
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
	Grants            []wire.Grant         `json:"grants,omitempty"`      // whole-session grants recorded by this decision
	ChildGrants       []wire.Grant         `json:"childGrants,omitempty"` // the suggestion a "this subagent" approval lets the child record (decision 0230)
	SessionDeny       *SessionDeny         `json:"sessionDeny,omitempty"` // the session deny this decision recorded (decision 0104)
	SessionGrantWidth string               `json:"sessionGrantWidth,omitempty"`
	CreatedAt         float64              `json:"createdAt"` // the request's, ms epoch
	DecidedAt         int64                `json:"decidedAt"` // ms epoch
	Auto              bool                 `json:"auto"`
	Approver          string               `json:"approver,omitempty"` // the hub approver (docs/hub.md) or approve page link (decision 0183) that decided
	// WireState is the state written on the wire when it differs from State
	// (a 3.x child gets approved for a session approval; a blank reason
	// turns denied_with_reason into denied), so a replay writes the same.
	WireState wire.State `json:"wireState,omitempty"`
	// Facts are the accessIntent as the child sent it, so the decision can
	// be replayed against another policy (permtui simulate); absent when the
	// request had none, and in records written before permtui kept them.
	Facts *AuditFacts `json:"facts,omitempty"`
	// Value is the display value a request without facts showed, the
	// only thing to tell a second file reusing its identity by (decision
	// 0201); absent for a request with facts and in older records.
	Value *string `json:"value,omitempty"`
}

// ShownAgent is the agent the recorded ask spoke for, as front ends named
// it live (wire.Request.Agent): the facts' principal, or for a record
// without facts the requester's word (Agent).
func (r AuditRecord) ShownAgent() string {
	if r.Facts != nil {
		return r.Facts.Principal
	}
	return r.Agent
}

// AuditFacts is a request's accessIntent in the audit log.
type AuditFacts struct {
	Principal     string            `json:"principal"` // principal.agentName: the agent the policy was scoped to
	Surface       string            `json:"surface"`
	MatchValues   []string          `json:"matchValues"`
	BoundaryValue *string           `json:"boundaryValue"`
	RequesterCwd  string            `json:"requesterCwd"`
	Floor         *string           `json:"floor,omitempty"`
	AskingUnits   []wire.AskingUnit `json:"askingUnits,omitempty"` // a bash chain's, in their wire shape
}

func auditFacts(in *wire.AccessIntent) *AuditFacts {
	if in == nil {
		return nil
	}
	return &AuditFacts{
		Principal: in.Principal.AgentName, Surface: in.Surface, MatchValues: in.MatchValues,
		BoundaryValue: in.BoundaryValue, RequesterCwd: in.RequesterCwd, Floor: in.Floor, AskingUnits: in.AskingUnits,
	}
}

// RuleRecord is the line of audit.jsonl that says who wrote which rule to
// which policy file (permtui rule add, the console's rule dialog).
type RuleRecord struct {
	Kind      string `json:"kind"` // always "rule"; decision lines have no kind
	Surface   string `json:"surface"`
	Pattern   string `json:"pattern"`
	Action    string `json:"action"`
	Reason    string `json:"reason,omitempty"`
	Scope     string `json:"scope"`
	Agent     string `json:"agent,omitempty"`
	File      string `json:"file"`
	Backup    string `json:"backup,omitempty"` // the previous version; "" for a new file
	By        string `json:"by"`               // the OS user who confirmed it
	Via       string `json:"via"`              // "rule add" or "console"
	WrittenAt int64  `json:"writtenAt"`        // ms epoch
}

// AuditPath is the audit log of a state directory: its one spelling.
func AuditPath(stateDir string) string { return filepath.Join(stateDir, "audit.jsonl") }

// RuleLog is audit.jsonl opened to take one rule record. A serving permtui
// may be appending decisions at the same time: O_APPEND keeps each line
// whole.
type RuleLog struct{ f *os.File }

// OpenRuleLog opens <stateDir>/audit.jsonl for a rule record. Opened before
// the rule is written, a log that refuses it (decision 0281) stops the write.
func OpenRuleLog(stateDir string) (*RuleLog, error) {
	if err := safefs.MkdirPrivate(stateDir); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	f, err := safefs.OpenAppendPrivate(AuditPath(stateDir))
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return &RuleLog{f}, nil
}

// Append writes rec, fsyncs and closes the log.
func (l *RuleLog) Append(rec RuleRecord) error {
	rec.Kind = "rule"
	line, err := json.Marshal(rec)
	if err == nil {
		_, err = l.f.Write(append(line, '\n'))
	}
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Close closes the log unwritten: the rule was not written either.
func (l *RuleLog) Close() { l.f.Close() }

// maxAuditLine caps one line read back from audit.jsonl. It is above the
// longest line permtui writes, so every decision recorded is replayed: a
// request is at most wire.MaxFileSize, its values appear in a record at
// most four times (matchValues, facts, grants, the shown value) and
// escaping grows a byte to six at most ('<' becomes \u003c). Only a line
// written by hand is longer; it is counted bad (decision 0282).
const maxAuditLine = 32 * wire.MaxFileSize

// AuditExpired marks the audit line of an ask that expired waiting for a
// person, so the log after a restart shows it too.
const AuditExpired = "expired"

// ReplacedReason is the reason of an expiry whose request file another file
// replaced: the child wrote its request again, and did not stop waiting.
const ReplacedReason = "the request file was replaced; a new ask follows"

// AuditRevoked marks the audit line of a revoked whole-session grant
// (Grants) or session deny (SessionDeny), so the log after a restart shows
// it too.
const AuditRevoked = "revoked"

// ReadAuditHistory calls fn with every decision record, expiry and
// revocation of the audit log at path, in order: what a restarted
// console's log shows.
func ReadAuditHistory(path string, fn func(AuditRecord)) (bad int, err error) {
	return readAuditFile(path, fn, true)
}

// ReadAudit calls fn with every decision record of the audit log at path,
// in order. Rule lines are not decisions and are passed over; a line that
// does not parse (a log cut short by a crash) is counted in bad, never
// guessed at.
func ReadAudit(path string, fn func(AuditRecord)) (bad int, err error) {
	return readAuditFile(path, fn, false)
}

// readAuditFile reads the log at path; a missing log is an empty one.
func readAuditFile(path string, fn func(AuditRecord), expiries bool) (bad int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if bad, err = readAudit(f, fn, expiries); err != nil {
		return bad, fmt.Errorf("%s: %w", path, err)
	}
	return bad, nil
}

func readAudit(r io.Reader, fn func(AuditRecord), expiries bool) (bad int, err error) {
	err = auditLines(r, func(line []byte, _ int64, _ bool) {
		switch {
		case line == nil:
			bad++
		case len(bytes.TrimSpace(line)) > 0:
			bad += readAuditLine(line, fn, expiries)
		}
	})
	return bad, err
}

// auditLines calls fn with each line of an audit log, its newline
// included, its length, and whether it ended (the last may not). A line
// above maxAuditLine is passed over, never held whole, and comes as nil: a
// child's values can grow past the cap when escaped, and one such line
// must not end the reading of every later line. The line is fn's only for
// the call.
func auditLines(r io.Reader, fn func(line []byte, n int64, ended bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	var n int64
	for {
		chunk, err := br.ReadSlice('\n')
		if n += int64(len(chunk)); n <= maxAuditLine {
			line = appendDoubling(line, chunk)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		switch {
		case n > maxAuditLine:
			fn(nil, n, err == nil)
		case n > 0:
			fn(line, n, err == nil)
		}
		if err == io.EOF {
			return nil
		}
		line, n = line[:0], 0
	}
}

// appendDoubling is append(line, chunk...) growing a full line to twice
// its size, at most maxAuditLine: append grows a large slice by a quarter,
// which allocated about five times the cap on the way to a line that long.
func appendDoubling(line, chunk []byte) []byte {
	if need := len(line) + len(chunk); need > cap(line) {
		line = append(make([]byte, 0, min(max(2*cap(line), need), maxAuditLine)), line...)
	}
	return append(line, chunk...)
}

// readAuditLine passes one line's decision record to fn; it returns 1 when
// the line does not parse. Every kind of line reads as an AuditRecord
// (rule and delivery lines share its fields' types).
func readAuditLine(line []byte, fn func(AuditRecord), expiries bool) int {
	var rec AuditRecord
	if json.Unmarshal(line, &rec) != nil {
		return 1
	}
	if rec.Kind == "" || expiries && (rec.Kind == AuditExpired || rec.Kind == AuditRevoked) {
		fn(rec)
	}
	return 0
}

// errAuditClosed: the audit log was closed (the server stopped).
var errAuditClosed = errors.New("audit log closed")

// auditLog appends records with group commit, the way databases commit: a
// caller whose record must be durable either leads a commit (one write and
// one fsync for every line waiting) or waits for the commit in progress and
// then leads the next. No goroutine sits between a decision and its fsync,
// so an automatic answer costs no hand-off (issue 23). Lines whose loss is
// harmless (delivered, expired) ride the next commit.
type auditLog struct {
	path   string
	report func(Event)  // repairs and the log's health, for the front end
	syncs  atomic.Int64 // fsyncs done, for benchmarks

	mu      sync.Mutex
	cond    *sync.Cond  // a commit finished
	next    *auditBatch // the lines of the next commit
	leading bool        // a commit is in progress
	closed  bool
	lazy    *time.Timer // flushes lines nobody waits for
	armed   bool        // lazy will fire

	spare []byte // the last committed batch's buffer, for the next

	// The leader alone uses these.
	file   *os.File
	failed bool // the last open or commit failed (reported as degraded)

	idxMu     sync.Mutex
	index     map[deliveryKey]linePos // the first decision recorded for each request
	indexFile *os.File                // the file the index points into
	indexed   int64                   // how far the index has read it
	earlier   int64                   // the file's length when first indexed: the lines before it are earlier runs'
}

// auditBatch is one commit: its lines, what they mean to the index, and
// the outcome its waiters read.
type auditBatch struct {
	buf     []byte
	notes   []indexNote
	durable bool // a caller waits for the fsync
	done    bool
	err     error
}

// lazyFlush bounds how long a line nobody waits for stays in memory when
// no decision follows it; lazyMax bounds how much waits.
const (
	lazyFlush = time.Second
	lazyMax   = 64 << 10
)

// newAuditLog opens the log at once, so a state directory that cannot hold
// it is reported as degraded before the first request, not per request.
func newAuditLog(stateDir string, report func(Event)) *auditLog {
	l := &auditLog{path: AuditPath(stateDir), report: report, next: &auditBatch{}}
	l.cond = sync.NewCond(&l.mu)
	l.lazy = time.AfterFunc(lazyFlush, l.flush)
	l.lazy.Stop() // armed by the first line nobody waits for
	l.health(l.open())
	return l
}

// health reports the log turning unusable, and usable again.
func (l *auditLog) health(err error) {
	switch {
	case err != nil && !l.failed:
		l.failed = true
		l.report(Degraded{Area: AreaAudit, Problem: err.Error() + "; answers wait until the audit log can be written"})
	case err == nil && l.failed:
		l.failed = false
		l.report(Degraded{Area: AreaAudit})
	}
}

// open opens the log for appending and repairs a torn tail first.
func (l *auditLog) open() error {
	if l.file != nil {
		return nil
	}
	if err := safefs.MkdirPrivate(filepath.Dir(l.path)); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	f, err := safefs.OpenAppendPrivate(l.path)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	moved, n, err := repairTail(f, l.path)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("audit: repair torn tail: %w", err)
	}
	if n > 0 {
		l.report(Repaired{Area: AreaAudit, What: fmt.Sprintf("audit.jsonl ended in a torn record (%d bytes, no newline): moved to %s", n, moved)})
	}
	l.idxMu.Lock()
	defer l.idxMu.Unlock()
	if l.indexFile == nil {
		// A file of its own: the leader closes and reopens l.file. Only
		// read, yet opened as l.file is: a symlink is not followed here either.
		rf, err := safefs.OpenAppendPrivate(l.path)
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("audit: %w", err)
		}
		idx := map[deliveryKey]linePos{}
		off, err := indexFrom(rf, 0, idx)
		if err != nil {
			_ = rf.Close()
			_ = f.Close()
			return fmt.Errorf("audit: index: %w", err)
		}
		l.index, l.indexFile, l.indexed, l.earlier = idx, rf, off, off
	}
	l.file = f
	return nil
}

// repairTail moves an unterminated last line (a crash mid-append, or a file
// cut by hand) into <path>.torn-<ms>, durably, and cuts it off the log, so
// the next record starts on a line of its own and every byte is kept.
func repairTail(f *os.File, path string) (string, int, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return "", 0, err
	}
	size := st.Size()
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return "", 0, err
	}
	if last[0] == '\n' {
		return "", 0, nil
	}
	start := size // the fragment begins after the last newline
	buf := make([]byte, 64<<10)
	for start > 0 {
		n := min(int64(len(buf)), start)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, start-n); err != nil {
			return "", 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			start = start - n + int64(i) + 1
			break
		}
		start -= n
	}
	frag := make([]byte, size-start)
	if _, err := f.ReadAt(frag, start); err != nil {
		return "", 0, err
	}
	moved := fmt.Sprintf("%s.torn-%d", path, time.Now().UnixMilli())
	if err := safefs.WriteFileSynced(moved, frag, 0o600); err != nil {
		return "", 0, err
	}
	if err := f.Truncate(start); err != nil {
		return "", 0, err
	}
	return moved, len(frag), f.Sync()
}

// append returns once rec is on stable storage, or with the reason it is not.
func (l *auditLog) append(rec AuditRecord) error { return l.appendAll([]AuditRecord{rec}) }

// appendAll makes recs durable with one commit (shared with whatever else
// is waiting), or returns why none of them is.
func (l *auditLog) appendAll(recs []AuditRecord) error {
	lines := make([][]byte, len(recs))
	for i, rec := range recs {
		line, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("audit: encode: %w", err)
		}
		lines[i] = line
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errAuditClosed
	}
	b := l.next
	for i, line := range lines {
		r := recs[i]
		b.add(line, noteOf(r.Kind, r.RequestID, r.ServedSession, r.RequesterSession, r.CreatedAt, false))
	}
	b.durable = true
	for !b.done {
		if l.leading {
			l.cond.Wait()
		} else {
			l.lead()
		}
	}
	return b.err
}

// appendLazy queues v for the next commit without waiting for it; a line
// that cannot be written is lost (only for lines whose loss is harmless,
// see Server.delivered). delivered lines carry the key they release.
func (l *auditLog) appendLazy(v any) {
	line, err := json.Marshal(v)
	if err != nil {
		return
	}
	var note indexNote // a line the index passes over (an expiry, a revocation)
	if d, ok := v.(AuditDelivery); ok {
		note = noteOf(d.Kind, d.RequestID, d.ServedSession, d.RequesterSession, d.CreatedAt, d.RequestGone)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.next.add(line, note)
	switch {
	case len(l.next.buf) >= lazyMax && !l.leading:
		l.lead()
	case !l.armed:
		l.armed = true
		l.lazy.Reset(lazyFlush)
	}
}

// add appends one line and, when it changes the index, where it is.
func (b *auditBatch) add(line []byte, note indexNote) {
	if note.decision || note.gone {
		note.pos = linePos{off: int64(len(b.buf)), n: int32(len(line) + 1)}
		b.notes = append(b.notes, note)
	}
	b.buf = append(append(b.buf, line...), '\n')
}

// flush commits the lines nobody waits for.
func (l *auditLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	for len(l.next.buf) > 0 && !l.leading {
		l.lead()
	}
	if len(l.next.buf) > 0 && !l.armed && !l.closed {
		// A commit in progress took none of them, and nothing appended
		// later may come to arm the timer again.
		l.armed = true
		l.lazy.Reset(lazyFlush)
	}
}

// lead commits l.next. l.mu is held, and released while the log is written.
func (l *auditLog) lead() {
	b := l.next
	l.next = &auditBatch{buf: l.spare[:0]}
	l.spare = nil
	l.leading = true
	l.mu.Unlock()
	b.err = l.commit(b)
	l.health(b.err)
	l.mu.Lock()
	l.leading, b.done = false, true
	if cap(b.buf) <= lazyMax {
		l.spare, b.buf = b.buf, nil
	}
	l.cond.Broadcast()
}

// close commits what is queued; later appends fail.
func (l *auditLog) close() {
	l.mu.Lock()
	l.closed = true
	l.lazy.Stop()
	for l.leading {
		l.cond.Wait()
	}
	if len(l.next.buf) > 0 {
		l.lead()
	}
	l.mu.Unlock()
	if l.file != nil {
		_ = l.file.Close()
	}
	l.idxMu.Lock()
	defer l.idxMu.Unlock()
	if l.indexFile != nil {
		_ = l.indexFile.Close()
	}
}

// commit writes one batch, fsyncs it when someone waits for it, and
// indexes its lines when nothing else was appended since the index last
// looked (else the next recorded reads them from the file).
func (l *auditLog) commit(b *auditBatch) error {
	if err := l.open(); err != nil {
		return err
	}
	n, err := l.file.Write(b.buf)
	if err == nil && b.durable {
		err = l.file.Sync()
		l.syncs.Add(1)
	}
	st, serr := l.file.Stat()
	switch {
	case err != nil && serr == nil:
		// Cut a partial batch off so the log stays line-valid, and out of
		// the index, which may have read it meanwhile.
		cut := st.Size() - int64(n)
		_ = l.file.Truncate(cut)
		l.unindexFrom(cut)
	case err == nil && serr == nil:
		l.indexBatch(st.Size()-int64(len(b.buf)), b)
	}
	if err != nil {
		_ = l.file.Close()
		l.file = nil // reopened on the next batch
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// unindexFrom forgets what the index read at or past off, a cut the log
// was truncated at: a later line written there must not be taken for it.
func (l *auditLog) unindexFrom(off int64) {
	l.idxMu.Lock()
	defer l.idxMu.Unlock()
	if l.indexFile == nil || l.indexed <= off {
		return
	}
	maps.DeleteFunc(l.index, func(_ deliveryKey, pos linePos) bool { return pos.off >= off })
	l.indexed = off
}

// indexBatch adds a written batch to the replay index without reading it
// back, when it begins where the index stopped reading: the file did not
// grow by anyone else's line before, or after, it (appends only grow it).
func (l *auditLog) indexBatch(at int64, b *auditBatch) {
	l.idxMu.Lock()
	defer l.idxMu.Unlock()
	if l.indexFile == nil || l.indexed != at {
		return
	}
	for _, note := range b.notes {
		note.pos.off += at
		note.apply(l.index)
	}
	l.indexed = at + int64(len(b.buf))
}
