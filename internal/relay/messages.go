// Package relay carries serving over a hub (docs/hub.md): a Relay is a
// subscriber of this host's serve.Server that sends residual asks to the
// hub and delivers the decisions that come back; an Approver is the hub
// side that consoles and headless approvers attach to, a serve.Source for
// the asks of every relay.
package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// askMsg is an ask on permtui.ask.<host>.<key>. Request is the request
// re-encoded by the canonical writer; every approver reads it with the same
// tolerant reader as a file from the inbox.
type askMsg struct {
	Host    string          `json:"host"`
	Session string          `json:"session"`
	Path    string          `json:"path"`
	At      int64           `json:"at"` // arrival at the relay, ms epoch
	Request json.RawMessage `json:"request"`
	Verdict resolve.Verdict `json:"verdict"`
	// Scopes are the relay's, judged with its policy: what each grant
	// reaches, the deny rules it passes named (decision 0246). Absent from
	// an older relay's ask.
	Scopes *serve.Scopes `json:"scopes,omitempty"`
}

// goneMsg on permtui.gone.<host>.<key>: the ask is no longer open. With a
// response it was answered (by the hub's decision, or locally: a grant, the
// policy); without one the child withdrew it, or wrote it again (Replaced).
type goneMsg struct {
	Response *wire.Response `json:"response,omitempty"`
	Auto     bool           `json:"auto,omitempty"`
	Approver string         `json:"approver,omitempty"`
	// Replaced: withdrawn because another file took its request's name;
	// that file is another ask (decision 0237).
	Replaced bool `json:"replaced,omitempty"`
	// Rejudged: withdrawn because a policy reload changed what its grants
	// reach; the ask follows under another name (decision 0246).
	Rejudged bool `json:"rejudged,omitempty"`
	// Ask is the ask of one never sent (too large for the hub), with its
	// request cut, so that consoles can show its denial.
	Ask *askMsg `json:"ask,omitempty"`
	// Unknown: a decision came for it, and the relay no longer had its
	// request (withdrawn while the relay was away).
	Unknown bool `json:"unknown,omitempty"`
	// Refused: the relay's server refused the decision made on it, saying
	// this; the ask follows under another name (decision 0273).
	Refused string `json:"refused,omitempty"`
	// swept: the approver let go of the ask on its relay's Sweep; never
	// sent.
	swept bool
	// movedTo: the approver let go of the copy because its relay now
	// publishes it under this host; never sent.
	movedTo string
}

// why says why an approver lets go of an ask its relay did not withdraw
// or answer (serve.Withdrawn.Why).
func (g goneMsg) why() string {
	switch {
	case g.movedTo != "":
		return "moved to " + g.movedTo + ", where it is asked again"
	case g.Unknown:
		return "its relay no longer has the request, so a decision for it reached no one"
	case g.Refused != "":
		return cutText(g.Refused)
	case g.swept:
		return "its relay started again and no longer has the request: the child stopped waiting while no relay served it"
	}
	return ""
}

// decisionMsg is the value of <host>.<key> in the decisions bucket: created
// once, so the first approver's decision is the only one. It is the
// person's choice exactly as made (Grants: their edit of a whole-session
// scope's grants, nil as offered); the relay's server judges it, records it
// and answers (decision 0160).
type decisionMsg struct {
	State  wire.State      `json:"state"`
	Reason string          `json:"reason,omitempty"`
	Scope  serve.ScopeKind `json:"scope,omitempty"`
	Grants []wire.Grant    `json:"grants,omitempty"`
	// EditDenies: the deny rules the hub console named for the edited
	// Grants; the relay's serve refuses an edit past others (decision 0259).
	EditDenies []wire.Grant `json:"editDenies,omitempty"`
	Unattended bool         `json:"unattended,omitempty"`
	Approver   string       `json:"approver"`
	// Via is where the approver's person decided when not at its console:
	// an approve page link, "web:<12 hex>" (decision 0183).
	Via       string `json:"via,omitempty"`
	DecidedAt int64  `json:"decidedAt"`
	// Asked is the digest of the request its approver was shown
	// (requestDigest): the relay applies the decision only to that request.
	Asked string `json:"asked"`
}

// requestDigest names the request bytes of an ask message: SHA-256, hex.
func requestDigest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// viaRE is what a decision's Via may say (decisionMsg.Via).
var viaRE = regexp.MustCompile(`^web:[0-9a-f]{12}$`)

// check refuses names the relay would record that no approver could have
// sent: an approver's name is its credentials' (a host-like name), and via
// is an approve page link.
func (d decisionMsg) check() error {
	switch {
	case !hub.ValidHost(d.Approver):
		return fmt.Errorf("approver name %s", wire.QuoteShort(d.Approver))
	case d.Via != "" && !viaRE.MatchString(d.Via):
		return fmt.Errorf("via %s", wire.QuoteShort(d.Via))
	}
	return nil
}

// approverOf is how the relay's audit names who decided: the approver, and
// the approve page link the person used, if any.
func (d decisionMsg) approverOf() string {
	if d.Via == "" {
		return d.Approver
	}
	return d.Approver + " · " + d.Via
}

// grantsMsg is the value of a root session's key in the grants bucket.
type grantsMsg struct {
	Session string       `json:"session"`
	Grants  []wire.Grant `json:"grants"`
}

var errBadMessage = errors.New("malformed hub message")

// maxVerdictText caps each text of the verdict an ask carries for display.
// The request is in the ask once; a verdict quoting it again in full (the
// explanation, the matched value) made an ask 1.5 times its request.
const maxVerdictText = 4 << 10

// shownVerdict is v as an ask carries it: its long texts cut at a rune
// boundary, marked with "…".
func shownVerdict(v resolve.Verdict) resolve.Verdict {
	v.Explanation, v.Value = cutText(v.Explanation), cutText(v.Value)
	if v.Hint != nil {
		h := shownVerdict(*v.Hint)
		v.Hint = &h
	}
	return v
}

// cutAsk is m with its request cut to what names it (ids, agent, display
// surface and value, the value cut as the verdict's texts are): the form in
// which an ask too large for the hub still reaches consoles. Its scopes go:
// each repeats the suggestion, and a denied ask offers none.
func cutAsk(m askMsg, req *wire.Request) (askMsg, error) {
	m.Scopes = nil
	cut := &wire.Request{ID: req.ID, CreatedAt: req.CreatedAt, RequesterSessionID: req.RequesterSessionID,
		TargetSessionID: req.TargetSessionID, RequesterAgentName: req.RequesterAgentName, Source: req.Source, Surface: req.Surface}
	if req.Value != nil {
		v := cutText(*req.Value)
		cut.Value = &v
	}
	raw, err := wire.MarshalRequest(cut)
	m.Request, m.Verdict = raw, shownVerdict(m.Verdict)
	return m, err
}

func cutText(s string) string {
	if len(s) <= maxVerdictText {
		return s
	}
	i := maxVerdictText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// decodeAsk reads an ask message; the request passes the inbox's reader.
func decodeAsk(data []byte) (askMsg, *wire.Request, error) {
	var m askMsg
	if err := json.Unmarshal(data, &m); err != nil {
		return m, nil, fmt.Errorf("%w: %v", errBadMessage, err)
	}
	if !hub.ValidHost(m.Host) {
		return m, nil, fmt.Errorf("%w: host %s", errBadMessage, wire.QuoteShort(m.Host))
	}
	req, err := wire.ParseRequest(m.Request)
	if err != nil {
		return m, nil, fmt.Errorf("%w: %v", errBadMessage, err)
	}
	return m, req, nil
}
