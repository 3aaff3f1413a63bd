package serve

import (
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// ScopeKind names one way to approve an ask for longer than once.
type ScopeKind string

const (
	// ScopeSubagent answers approved_for_session: the child records a
	// grant for its own session.
	ScopeSubagent ScopeKind = "subagent"
	// ScopeSubagentBoth adds sessionGrantWidth "family" (both directions).
	ScopeSubagentBoth ScopeKind = "subagent_both"
	// ScopeSession: permtui records the child's suggestion for every
	// subagent of the served root session and answers approved.
	ScopeSession ScopeKind = "session"
	// ScopeSessionBoth: the same, widened to both directions.
	ScopeSessionBoth ScopeKind = "session_both"
)

// Scope is one option of "approve for session" as serve offers it for one
// ask. Front ends show Title, Effect, Grants and Caveat as given and send
// back Kind; what each scope records is decided here only (decision 0049).
type Scope struct {
	Kind  ScopeKind
	Title string
	// Effect says who records what; Grants follow it when non-nil, and
	// are exactly what is recorded.
	Effect string
	Grants []wire.Grant
	// Caveat is what this child's version does differently, if anything.
	Caveat string
}

// Scopes are the options an ask offers; Note says why one is missing.
type Scopes struct {
	Options []Scope
	Note    string
}

// Find returns the offered scope of that kind.
func (s Scopes) Find(kind ScopeKind) (Scope, bool) {
	for _, o := range s.Options {
		if o.Kind == kind {
			return o, true
		}
	}
	return Scope{}, false
}

// OfferedScopes works out, from what the child sent (which tells its pi
// version, wire-protocol §9.1), which scopes an ask offers and exactly what
// each one does:
//   - pi 3.x (no display fields, suggestion or facts) reads
//     approved_for_session as a denial, so "this subagent" is answered
//     approved and nothing is recorded (§8.3);
//   - a child without a suggestion records a grant of its own making;
//   - "both directions" needs every suggested grant to prove one direction
//     (ruleset-semantics §8.3); for this subagent it also needs a child that
//     reads sessionGrantWidth (30.2+), which the 20.x suggestion shape rules
//     out;
//   - the whole session needs a suggestion (the grants permtui records),
//     and permtui's grants answer only asks that carry facts (20.8+).
func OfferedScopes(req *wire.Request) Scopes {
	var out Scopes
	if req.SessionApproval == nil {
		effect := "the child records its own grant (no suggestion sent)"
		if predatesSessionState(req) {
			effect = "answered as approve once; nothing is recorded: this child (pi 3.x) cannot read a session approval"
		}
		out.Options = []Scope{{Kind: ScopeSubagent, Title: "this subagent only", Effect: effect}}
		out.Note = "the whole session is not offered: the request carries no sessionApproval suggestion, so permtui has no grant to record"
		return out
	}

	proven := req.SessionApproval.Grants
	widened, wide := resolve.Widen(proven)
	legacyShape := req.SessionApproval.Legacy
	out.Options = append(out.Options, Scope{Kind: ScopeSubagent, Title: "this subagent only",
		Effect: "the child records", Grants: proven})
	switch {
	case wide && legacyShape:
		out.Note = "both directions for this subagent is not offered: a child that sends the 20.x suggestion shape cannot read a grant width"
	case wide:
		out.Options = append(out.Options, Scope{Kind: ScopeSubagentBoth, Title: "this subagent, both directions (read and write)",
			Effect: "the child records", Grants: widened,
			Caveat: "children before pi 30.2 record only the direction asked for"})
	}
	caveat := ""
	if req.AccessIntent == nil {
		caveat = "permtui's grants answer only asks that carry facts (pi 20.8 and newer); this child sends none, so its own later asks still come here"
	}
	out.Options = append(out.Options, Scope{Kind: ScopeSession, Title: "the whole session",
		Effect: "permtui records", Grants: proven, Caveat: caveat})
	if wide {
		out.Options = append(out.Options, Scope{Kind: ScopeSessionBoth, Title: "the whole session, both directions (read and write)",
			Effect: "permtui records", Grants: widened, Caveat: caveat})
	}
	return out
}

// predatesSessionState: a request with no display fields, suggestion or
// facts comes from a 3.x child, which reads approved_for_session as
// unreadable (a deny); such a child gets plain approved (wire-protocol §8.3).
func predatesSessionState(req *wire.Request) bool {
	return req.Surface == nil && req.Value == nil && req.SessionApproval == nil && req.AccessIntent == nil
}
