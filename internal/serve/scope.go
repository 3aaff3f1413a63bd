package serve

import (
	"slices"
	"strings"

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
	// Wider names each of Grants that reaches beyond the ask (decision
	// 0189): for the whole session a front end names them and asks again
	// before recording; for the subagent, the child records them itself.
	Wider []Reach
}

// Reach is how one suggested grant reaches beyond the ask it came with:
// request data, so never taken as narrow on the child's word.
type Reach struct {
	Grant wire.Grant
	// Surface: the surfaces it covers besides the ask's, worded; "" when
	// only the ask's (or, at the width chosen, its family's).
	Surface string
	// Value: the values it covers besides the ask's, worded, or "".
	Value string
	// Denies: the policy's deny rules it would answer before (a grant beats
	// every config rule, ruleset-semantics E01).
	Denies []resolve.PassedDeny
	// OnlyMisses: all it does beyond the ask is not match the ask's values
	// (Value says so): the one reach that widens nothing.
	OnlyMisses bool
}

// missesAsk words a grant on the ask's surface that does not cover it.
const missesAsk = "does not match this ask's values"

// Severe: the grant reaches another surface, passes a deny rule or covers
// every value, a sensitive one or what the home makes it, more than
// missing the ask; a front end names each such grant and never folds it
// into a count.
func (r Reach) Severe() bool { return !r.OnlyMisses }

// rank orders reaches most severe first: every surface, another surface,
// a deny rule passed, every value, then a pattern that misses the ask.
func (r Reach) rank() int {
	switch {
	case resolve.EveryValue(r.Grant.Surface):
		return 0
	case r.Surface != "":
		return 1
	case len(r.Denies) > 0:
		return 2
	case r.Severe():
		return 3
	}
	return 4
}

// Scopes are the options an ask offers; Note says why one is missing.
type Scopes struct {
	Options []Scope
	Note    string
	// Rev counts the times serve judged them again after a policy reload
	// changed them (ScopesChanged); a choice names the Rev it was made
	// from (Decision.ScopesRev).
	Rev int `json:",omitempty"`
	// NoPolicy: judged without the asking host's policy (a hub approver
	// for a relay that sent none), so the deny rules a grant would pass
	// are not named.
	NoPolicy bool `json:",omitempty"`
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
//   - the whole session needs a suggestion (the grants permtui records)
//     one of whose grants covers the ask (decision 0189), and permtui's
//     grants answer only asks that carry facts (20.8+);
//   - each grant beyond the ask is named, with the deny rules of judge's
//     policy it would pass (judge may be nil where no policy is held).
func OfferedScopes(req *wire.Request, judge Judge) Scopes {
	out := Scopes{NoPolicy: judge == nil}
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
	provenReach, widenedReach := reaches(req, proven, judge, false), []Reach(nil)
	if wide {
		widenedReach = reaches(req, widened, judge, true)
	}
	out.Options = append(out.Options, Scope{Kind: ScopeSubagent, Title: "this subagent only",
		Effect: "the child records", Grants: proven, Wider: provenReach})
	switch {
	case wide && legacyShape:
		out.Note = "both directions for this subagent is not offered: a child that sends the 20.x suggestion shape cannot read a grant width"
	case wide:
		out.Options = append(out.Options, Scope{Kind: ScopeSubagentBoth, Title: "this subagent, both directions (read and write)",
			Effect: "the child records", Grants: widened, Wider: widenedReach,
			Caveat: "children before pi 30.2 record only the direction asked for"})
	}
	if !slices.ContainsFunc(proven, func(g wire.Grant) bool { return covers(req, g, judge) }) {
		out.Note = joinNotes(out.Note, "the whole session is not offered: none of the child's suggested grants covers this ask, so permtui would record authority nobody saw work")
		return out
	}
	caveat := ""
	if req.AccessIntent == nil {
		caveat = "permtui's grants answer only asks that carry facts (pi 20.8 and newer); this child sends none, so its own later asks still come here"
	}
	out.Options = append(out.Options, Scope{Kind: ScopeSession, Title: "the whole session",
		Effect: "permtui records", Grants: proven, Caveat: caveat, Wider: provenReach})
	if wide {
		out.Options = append(out.Options, Scope{Kind: ScopeSessionBoth, Title: "the whole session, both directions (read and write)",
			Effect: "permtui records", Grants: widened, Caveat: caveat, Wider: widenedReach})
	}
	return out
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// AskedFacts is the ask as a grant's reach and coverage are judged: its
// facts, or for a child that sends none (20.7.3) the surface and value it
// shows, the only ask there is to compare a grant with.
func AskedFacts(req *wire.Request) *wire.Request {
	if req.AccessIntent != nil || req.Value == nil {
		return req
	}
	r := *req
	r.AccessIntent = &wire.AccessIntent{Surface: SurfaceOf(req), MatchValues: []string{*req.Value}}
	return &r
}

// covers: g applies to the ask, by the policy's matcher, or without a
// policy by the matcher alone.
func covers(req *wire.Request, g wire.Grant, judge Judge) bool {
	if judge != nil {
		return judge.Covers(AskedFacts(req), g)
	}
	return resolve.Covers(AskedFacts(req), g, "")
}

// denyPasser is a Judge (*resolve.Policy) that names the deny rules a grant
// would pass.
type denyPasser interface {
	DeniesPassed(g wire.Grant) []resolve.PassedDeny
}

// reaches are the grants of gs that reach beyond the ask, most severe
// first: a surface other than the ask's (its family counts as the ask's: a
// "both directions" scope names that width in its title), a wildcard
// surface, a pattern for every value or nearly (one that begins with a
// wildcard), one written from a home unknown here (no judge: a hub
// approver; the asking host expands it), one that misses the ask, and the
// policy's denies each would pass.
func reaches(req *wire.Request, gs []wire.Grant, judge Judge, both bool) []Reach {
	passer, _ := judge.(denyPasser)
	var out []Reach
	for _, g := range gs {
		r := Reach{Grant: g}
		r.Surface, r.Value = Width(req, g, judge != nil)
		if r.Surface == "" && !both {
			r.Surface = otherDirection(req, g)
		}
		misses := r.Surface == "" && r.Value == "" && !covers(req, g, judge)
		if r.Value == "" {
			r.Value = sensitiveCovered(req, g, judge)
		}
		if passer != nil {
			r.Denies = passer.DeniesPassed(g)
		}
		if misses {
			r.OnlyMisses = r.Value == "" && len(r.Denies) == 0
			r.Value = joinNotes(missesAsk, r.Value)
		}
		if r.Surface != "" || r.Value != "" || len(r.Denies) > 0 {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Reach) int { return a.rank() - b.rank() })
	return out
}

// otherDirection names the direction a bare family grant adds to a
// directional ask ("path" on a path_write ask also reads), outside the
// scope whose title says both directions.
func otherDirection(req *wire.Request, g wire.Grant) string {
	asked := SurfaceOf(req)
	if fam, ok := resolve.Family(asked); ok && g.Surface == fam {
		other := fam + "_read"
		if asked == other {
			other = fam + "_write"
		}
		return "both directions: " + other + " too, not only this ask's " + asked
	}
	return ""
}

// homeKnower is a Judge (*resolve.Policy) that knows the home "~" means.
type homeKnower interface{ Options() resolve.LoadOptions }

// sensitiveCovered names a sensitive value g would answer besides the
// ask's own (resolve.SensitiveCovered), judged by the policy's matcher
// (without one, by the matcher alone); "" for none.
func sensitiveCovered(req *wire.Request, g wire.Grant, judge Judge) string {
	var asked []string
	if ai := AskedFacts(req).AccessIntent; ai != nil {
		asked = ai.MatchValues
	}
	home := ""
	if hk, ok := judge.(homeKnower); ok {
		home = hk.Options().Home
	}
	v := resolve.SensitiveCovered(home, asked, func(probe *wire.Request) bool { return covers(probe, g, judge) })
	if v == "" {
		return ""
	}
	return "covers " + v + " too"
}

// Width is how a session rule written as g (a grant, or a session deny)
// reaches beyond the ask whatever the policy: the surfaces it covers besides
// the ask's (its family counts as the ask's), and every value or nearly
// (a pattern that begins with a wildcard), or, where the home is not known
// here, whatever the asking host's home makes a "~" pattern; "" for none.
func Width(req *wire.Request, g wire.Grant, homeKnown bool) (surface, value string) {
	asked := SurfaceOf(req)
	fam, _ := resolve.Family(asked)
	switch {
	case resolve.EveryValue(g.Surface):
		surface = "every surface, not only this ask's " + asked
	case strings.ContainsAny(g.Surface, "*?"):
		surface = "every surface " + g.Surface + " matches, not only this ask's " + asked
	case g.Surface != asked && (fam == "" || g.Surface != fam):
		surface = "another surface than this ask's " + asked
	}
	switch {
	case resolve.EveryValue(g.Pattern):
		value = "every value"
	case strings.HasPrefix(g.Pattern, "*"):
		value = "nearly every value: the pattern begins with *"
	case !homeKnown && resolve.HomeRelative(g.Pattern):
		value = "depends on the asking host's home, unknown here: any value under it"
	}
	return surface, value
}

// predatesSessionState: a request with no display fields, suggestion or
// facts comes from a 3.x child, which reads approved_for_session as
// unreadable (a deny); such a child gets plain approved (wire-protocol §8.3).
func predatesSessionState(req *wire.Request) bool {
	return req.Surface == nil && req.Value == nil && req.SessionApproval == nil && req.AccessIntent == nil
}
