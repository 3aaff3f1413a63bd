package wire

import (
	"errors"
	"math"
	"time"
)

// MarshalHeartbeat encodes a heartbeat record {"sessionId","pid","updatedAt"}.
func MarshalHeartbeat(h Heartbeat) ([]byte, error) {
	if h.SessionID == "" || h.PID <= 0 {
		return nil, errors.New("heartbeat needs a session id and a positive pid")
	}
	return marshalCompact(h)
}

// ParseHeartbeat reads a heartbeat record as a child does (§7.3). An error
// means the record is unreadable or unusable, which counts as absent:
// sessionId must be a non-empty string, pid a positive integer and updatedAt
// a finite number.
func ParseHeartbeat(data []byte) (Heartbeat, error) {
	var h Heartbeat
	v, err := decodeJSON(data)
	if err != nil {
		return h, err
	}
	o, ok := asObject(v)
	if !ok {
		return h, errors.New("heartbeat is not a JSON object")
	}
	if h.SessionID, _ = asString(o.Get("sessionId")); h.SessionID == "" {
		return h, errors.New("heartbeat sessionId is not a non-empty string")
	}
	pid, ok := asFloat(o.Get("pid"))
	if !ok || pid != math.Trunc(pid) || pid <= 0 || pid > math.MaxInt32 {
		return h, errors.New("heartbeat pid is not a positive integer")
	}
	h.PID = int(pid)
	if h.UpdatedAt, ok = asInt64Truncated(o.Get("updatedAt")); !ok {
		return h, errors.New("heartbeat updatedAt is not a finite number")
	}
	return h, nil
}

// Liveness is a heartbeat's classification (§7.3).
type Liveness string

const (
	LivenessAlive   Liveness = "alive"
	LivenessStale   Liveness = "stale"
	LivenessDeadPID Liveness = "dead_pid"
	LivenessAbsent  Liveness = "absent" // missing, unreadable or unusable
)

// HeartbeatStaleAfter is SERVING_HEARTBEAT_STALE_MS.
const HeartbeatStaleAfter = 5000 * time.Millisecond

// ClassifyHeartbeat classifies a usable record: dead pid first, then stale,
// else alive. alive reports whether a pid exists (safefs.PIDAlive).
func ClassifyHeartbeat(h Heartbeat, now time.Time, alive func(pid int) bool) Liveness {
	if !alive(h.PID) {
		return LivenessDeadPID
	}
	if now.UnixMilli()-h.UpdatedAt >= HeartbeatStaleAfter.Milliseconds() {
		return LivenessStale
	}
	return LivenessAlive
}
