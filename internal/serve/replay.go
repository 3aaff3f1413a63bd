package serve

import (
	"bytes"
	"cmp"
	"io"
	"os"
	"unicode/utf8"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/wire"
)

// One request delivery gets one decision, across crashes (decision 0054).
// The audit log is the source of truth: when it is opened, every decision
// in it is indexed by the request it answered (served session, request id,
// requester session, createdAt). A request that arrives again after a
// restart, with a recorded decision, is answered with that decision and not
// judged again. Each written response is recorded as a "delivered" line, so
// the log says what the child was told. A request whose file is gone after
// its answer cannot arrive again, so a delivered line that says so takes
// its decision out of the index: the index holds the decisions not yet
// delivered, not the whole history (decision 0119).

// deliveryKey is the Sum of a request's wire.RequestKey (decision 0186)
// over its strings as logged (asLogged): the hub's key for a request whose
// strings are UTF-8, another for one with a lone surrogate. The two are
// never compared: the relay keys its hub messages itself.
type deliveryKey [16]byte

// keyOf is the index key of an audit line's request. Its strings are taken
// as the audit line gives them back, so a request, the line recorded for it
// and the line read after a restart have one key.
func keyOf(session, requestID, requester string, createdAt float64) deliveryKey {
	return deliveryKey(wire.RequestKey{Session: asLogged(session), ID: asLogged(requestID), Requester: asLogged(requester), CreatedAt: createdAt}.Sum())
}

func keyOfRequest(session string, req *wire.Request) deliveryKey {
	return keyOf(session, req.ID, req.RequesterSessionID, req.CreatedAt)
}

// asLogged is s as an audit line reads back: the encoder writes each byte
// that is not UTF-8 (a lone surrogate a child sent, decision 0175) as
// U+FFFD, as converting to runes does.
func asLogged(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

// sameFacts reports whether req is the request rec decided, fact for fact
// as the log keeps them (record): the key names a request by its identity,
// which a second file can reuse with other facts (decision 0210). A request
// without facts is compared by its display value (decision 0201). A record
// written before the log kept the facts or that value is compared by agent,
// surface and values.
func (s *Server) sameFacts(rec AuditRecord, req *wire.Request) bool {
	again := s.record(&pending{Ask: Ask{Arrived: inbox.Arrived{Request: req}}}, "", wire.Response{})
	if rec.Facts == nil {
		again.Facts = nil
	}
	if rec.Value == nil {
		again.Value = nil
	}
	return bytes.Equal(factsLine(rec), factsLine(again))
}

// shownValue is the display value of a request without facts as the log
// keeps it: "" when it has none.
func shownValue(req *wire.Request) *string {
	if req.Value == nil {
		return new("")
	}
	return new(*req.Value)
}

// factsLine is what the log keeps of a decision's facts, as it writes it.
func factsLine(rec AuditRecord) []byte {
	line, _ := json.Marshal(AuditRecord{Agent: rec.Agent, Surface: rec.Surface, MatchValues: rec.MatchValues, Facts: rec.Facts, Value: rec.Value})
	return line
}

// linePos locates a decision line in audit.jsonl.
type linePos struct {
	off int64
	n   int32
}

// AuditDelivery is a `"kind":"delivered"` line of audit.jsonl: the response
// to a recorded decision was written (ReadAudit passes such lines over).
type AuditDelivery struct {
	Kind             string     `json:"kind"` // "delivered"
	AskID            AskID      `json:"askId"`
	RequestID        string     `json:"requestId"`
	ServedSession    string     `json:"servedSession"`
	RequesterSession string     `json:"requesterSession"`
	CreatedAt        float64    `json:"createdAt"`
	State            wire.State `json:"state"` // as written on the wire
	Approved         bool       `json:"approved"`
	DeliveredAt      int64      `json:"deliveredAt"`
	Replayed         bool       `json:"replayed,omitempty"` // answered from a decision recorded by an earlier run
	// RequestGone: the request file was gone once the response was
	// written (permtui removed it, or the child did), so the request
	// cannot be delivered again.
	RequestGone bool `json:"requestGone,omitempty"`
}

// deliveryKind marks delivery lines.
const deliveryKind = "delivered"

// indexNote is what one audit line changes in the replay index, whether
// read from the file (indexFrom) or committed by this process: the first
// decision recorded for a request is kept until a delivered line says the
// request is gone (decision 0119).
type indexNote struct {
	key      deliveryKey
	decision bool // a decision line
	gone     bool // a delivered line whose request cannot come again
	pos      linePos
}

// noteOf classifies an audit line by its fields.
func noteOf(kind, requestID, session, requester string, createdAt float64, requestGone bool) indexNote {
	n := indexNote{decision: kind == "" && requestID != "", gone: kind == deliveryKind && requestGone && requestID != ""}
	if n.decision || n.gone {
		n.key = keyOf(session, requestID, requester, createdAt)
	}
	return n
}

// apply changes idx as the line says.
func (n indexNote) apply(idx map[deliveryKey]linePos) {
	switch _, seen := idx[n.key]; {
	case n.decision && !seen:
		idx[n.key] = n.pos
	case n.gone:
		delete(idx, n.key)
	}
}

// indexFrom indexes the complete lines of the log from off on, keeping the
// first decision recorded for each request until a delivered line says its
// request is gone, and returns where it stopped (before a line still being
// written). Lines that do not parse, or that are above the cap, are skipped.
func indexFrom(f *os.File, off int64, idx map[deliveryKey]linePos) (int64, error) {
	err := auditLines(io.NewSectionReader(f, off, 1<<62), func(line []byte, n int64, ended bool) {
		if !ended {
			return // an unterminated tail is not indexed yet
		}
		if line != nil {
			indexLine(line, off, idx)
		}
		off += n
	})
	return off, err
}

// indexLine notes what the line at off says of its request, if it parses.
func indexLine(line []byte, off int64, idx map[deliveryKey]linePos) {
	var head struct {
		Kind             string  `json:"kind"`
		RequestID        string  `json:"requestId"`
		ServedSession    string  `json:"servedSession"`
		RequesterSession string  `json:"requesterSession"`
		CreatedAt        float64 `json:"createdAt"`
		RequestGone      bool    `json:"requestGone"`
	}
	if json.Unmarshal(line, &head) == nil {
		note := noteOf(head.Kind, head.RequestID, head.ServedSession, head.RequesterSession, head.CreatedAt, head.RequestGone)
		note.pos = linePos{off: off, n: int32(len(line))}
		note.apply(idx)
	}
}

// recorded returns the decision the log holds for the request, if any, and
// whether the index could be looked at and believed. It first indexes what
// was appended since the last look, by another permtui that served the
// session before it (this process's own lines are indexed as committed).
func (l *auditLog) recorded(k deliveryKey) (rec AuditRecord, ok, looked bool) {
	l.idxMu.Lock()
	if l.indexFile == nil {
		l.idxMu.Unlock()
		return AuditRecord{}, false, false
	}
	// What could not be read is not looked at: the caller looks again
	// before it records a decision of its own.
	st, err := l.indexFile.Stat()
	if err == nil && st.Size() > l.indexed {
		var off int64
		if off, err = indexFrom(l.indexFile, l.indexed, l.index); err == nil {
			l.indexed = off
		}
	}
	pos, ok := l.index[k]
	f := l.indexFile
	l.idxMu.Unlock()
	if err != nil {
		return AuditRecord{}, false, false
	}
	if !ok {
		return AuditRecord{}, false, true
	}
	line := make([]byte, pos.n)
	if _, err := f.ReadAt(line, pos.off); err != nil || json.Unmarshal(line, &rec) != nil {
		return AuditRecord{}, false, false
	}
	return rec, true, true
}

// earlierRun reports whether the decision recorded for k was in the log
// before this process opened it.
func (l *auditLog) earlierRun(k deliveryKey) bool {
	l.idxMu.Lock()
	defer l.idxMu.Unlock()
	pos, ok := l.index[k]
	return ok && pos.off < l.earlier
}

// replayAnswer is the answer a recorded decision gave: audited already, its
// grants and session deny recorded again if the crash came before they were
// (Add and AddDeny skip what is already there).
func replayAnswer(rec AuditRecord) *answer {
	return &answer{record: rec, audited: true, replayed: true}
}

// response is what rec answers on the wire; the caller stamps the
// responder and the time.
func response(rec AuditRecord) wire.Response {
	state := cmp.Or(rec.WireState, rec.State)
	if state == wire.StateApprovedForServingSession {
		state = wire.StateApproved // the wire never says it (ADR 0006)
	}
	return wire.Response{Approved: rec.Approved, State: state, DenialReason: rec.Reason,
		DecidedBy: rec.DecidedBy, SessionGrantWidth: rec.SessionGrantWidth}
}

// delivered records that the response to p was written. It does not wait
// for the fsync: the decision is already durable, and a delivery line lost
// in a crash only means the request, if still there, is answered again with
// the same decision.
func (s *Server) delivered(p *pending, resp wire.Response, replayed bool) {
	s.audit.appendLazy(AuditDelivery{
		Kind: deliveryKind, AskID: p.ID, RequestID: p.Request.ID, ServedSession: p.Session,
		RequesterSession: p.Request.RequesterSessionID, CreatedAt: p.Request.CreatedAt,
		State: resp.State, Approved: resp.Approved, DeliveredAt: resp.RespondedAt, Replayed: replayed,
		RequestGone: !s.inbox.Present(p.ID),
	})
}
