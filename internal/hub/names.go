// Package hub is permtui's transport beyond one machine: an embedded NATS
// server with JetStream, the credentials of its two roles (relay, approver),
// and the subjects, stream and buckets relays and consoles share (decision
// 0080). It holds no judgment: relays judge locally, people decide at
// consoles, and the hub only carries asks and decisions between them.
package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Names of the stream and buckets. A bucket B is stored in stream KV_B with
// subjects $KV.B.<key>.
const (
	AsksStream      = "PERMTUI_ASKS"
	DecisionsBucket = "PERMTUI_DECISIONS"
	GrantsBucket    = "PERMTUI_GRANTS"

	DecisionsStream = "KV_" + DecisionsBucket
	GrantsStream    = "KV_" + GrantsBucket
	// DecisionSubjectPrefix precedes a decision key in the decisions stream.
	DecisionSubjectPrefix = "$KV." + DecisionsBucket + "."
	// GrantSubjectPrefix precedes a grants key (GrantsKey) in the grants
	// stream.
	GrantSubjectPrefix = "$KV." + GrantsBucket + "."
)

// Limits, stated in docs/hub.md and enforced by the stream and bucket
// configurations (the server refuses what exceeds them).
const (
	// MaxAskBytes is the largest ask message: a request file is at most
	// 1 MiB, so every readable request fits with its envelope.
	MaxAskBytes = 1<<20 + 64<<10
	// MaxDecisionBytes bounds a decision (state, reason, approver).
	MaxDecisionBytes = 16 << 10
	// MaxGrantsBytes bounds the grants of one root session.
	MaxGrantsBytes = 1 << 20
	// DefaultRetention is how long asks and decisions stay on the hub. A
	// relay publishes its open asks again when it reconnects, so an ask that
	// outlives the retention comes back while its request file is there.
	DefaultRetention = 24 * time.Hour
	// dedupWindow: a relay that publishes an ask again within this window
	// (a retry after a lost acknowledgement) stores it once.
	dedupWindow = 2 * time.Minute
)

var hostRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidHost reports whether name may name a relay host: it becomes a subject
// token and a consumer name, so only letters, digits, '-' and '_'.
func ValidHost(name string) bool { return hostRE.MatchString(name) }

// SessionKey is a root session's digest: the second half of its grants keys.
func SessionKey(session string) string {
	sum := sha256.Sum256([]byte(session))
	return hex.EncodeToString(sum[:16])
}

// AskSubject carries an ask of host, key the ask's wire.RequestKey (decision 0186); GoneSubject says it was answered or
// withdrawn; DecisionKey is its key in the decisions bucket; RelayConsumer is
// host's durable consumer of the decisions. MsgID deduplicates a message of
// host's about an ask (kind "ask" or "gone"): with the host in it, a relay
// restarted under another host publishes its waiting asks anew.
func AskSubject(host, key string) string  { return "permtui.ask." + host + "." + key }
func GoneSubject(host, key string) string { return "permtui.gone." + host + "." + key }
func DecisionKey(host, key string) string { return host + "." + key }
func RelayConsumer(host string) string    { return "relay_" + host }

// MsgID is a message's deduplication id: n numbers the messages of one
// relay process (run), so that a retry of one is stored once while the
// same key sent anew, by a restarted relay (decision 0245) or after a
// reload brought an ask back to it (decision 0290), is stored and shown.
func MsgID(kind, host, key string, n uint64, run string) string {
	return kind + "." + host + "." + key + "." + strconv.FormatUint(n, 10) + "." + run
}

// RunOf is the relay process part of a MsgID.
func RunOf(msgID string) string { return msgID[strings.LastIndexByte(msgID, '.')+1:] }

// SweepKey is the key of a relay's sweep message on its gone subject:
// every ask of its host it did not send is gone (decision 0275). No ask's
// key is a word.
const SweepKey = "sweep"

// GrantsConsumer is host's relay's one consumer of the grants, which it
// makes anew each time it starts to follow them.
func GrantsConsumer(host string) string { return "grants_" + host }
func relayInbox(host string) string     { return "_RELAY_" + host }

// MarkKey is where approver marks, before creating a decision at
// decisionKey, the decision it writes: the digest of its bytes, under its
// own name, which only its credentials may publish. A relay records a
// decision's approver only with its mark there (decision 0212).
func MarkKey(decisionKey, approver string, decision []byte) string {
	sum := sha256.Sum256(decision)
	return decisionKey + "." + approver + "." + hex.EncodeToString(sum[:16])
}

// MarkGetSubject is the direct-get subject of a decision's mark key (with
// wildcards, of the marks a role may look up): the relay's lookup and its
// permission name the marks one way.
func MarkGetSubject(markKey string) string {
	return "$JS.API.DIRECT.GET." + DecisionsStream + "." + DecisionSubjectPrefix + markKey
}

// GrantsKey names the grants of a root session that host's relay recorded
// and applies (decision 0211).
func GrantsKey(host, session string) string { return host + "." + SessionKey(session) }

// AppliedKey names the grants of a root session that host's relay applies,
// which it publishes for consoles to list: a key of three tokens, which
// only that relay's credentials may write (decision 0274).
func AppliedKey(host, session string) string { return GrantsKey(host, session) + AppliedSuffix }

// AppliedSuffix ends every AppliedKey.
const AppliedSuffix = ".applied"
