package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// RequestKey is the identity of one ask across processes and restarts
// (decision 0186): the replay index of the audit log and the hub both name
// an ask by it. An inbox AskID names one delivery within one process only.
type RequestKey struct {
	Session   string  // the served root session
	ID        string  // the request id
	Requester string  // the requester's session id
	CreatedAt float64 // the request's createdAt: a reused id with a new one is a new ask
}

// KeyOf is the key of req served for session.
func KeyOf(session string, req *Request) RequestKey {
	return RequestKey{Session: session, ID: req.ID, Requester: req.RequesterSessionID, CreatedAt: req.CreatedAt}
}

// Sum is the first 16 bytes of SHA-256 over the four fields, each ended by
// a NUL: small enough for an index of every open decision.
func (k RequestKey) Sum() [16]byte {
	h := sha256.New()
	for _, part := range []string{k.Session, k.ID, k.Requester, strconv.FormatFloat(k.CreatedAt, 'g', -1, 64)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var s [16]byte
	copy(s[:], h.Sum(nil))
	return s
}

// String is Sum in 32 lower-case hex digits: a valid NATS subject token and
// key-value key.
func (k RequestKey) String() string {
	s := k.Sum()
	return hex.EncodeToString(s[:])
}
