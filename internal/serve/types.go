// Package serve is the serving loop: each request the inbox delivers is judged
// by the resolver; allow and deny are answered at once, ask waits for a person
// (or the headless policy). Every decision is audited before it is written.
package serve

import (
	"time"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// AskID names one delivery of a request, from the inbox that minted it to
// the audit record (decision 0049). Nothing names an ask by its file name.
type AskID = inbox.AskID

// Ask is one request that reached the serving loop: the inbox's delivery
// (ID, Session, Path, Request, At) with the recorded authority's verdict.
type Ask struct {
	inbox.Arrived
	Verdict resolve.Verdict
	Scopes  Scopes // what "approve for session" offers for it
	// Host is the relay host the ask came from when a console attaches to a
	// hub (docs/hub.md); empty for this machine's own inbox.
	Host string
}

// Decision is a person's answer to an ask.
type Decision struct {
	Ask AskID
	// State is approved, denied or denied_with_reason; empty when Scope
	// is set.
	State  wire.State
	Reason string // denied_with_reason only; blank turns into denied
	// Scope approves for longer than once: one of the ask's Scopes.
	Scope ScopeKind
	// Grants, for a whole-session scope, are the person's edit of the
	// scope's grants (same surfaces, in order); nil records them as
	// offered. Each edited set must still cover the ask, or the decision is
	// refused.
	Grants []wire.Grant
	// EditDenies are the deny rules (surface and pattern) the person was
	// shown the edited Grants pass (ShownDenies of EditReach); an edit that
	// passes one not among them is refused (decision 0259).
	EditDenies []wire.Grant
	// ScopesRev is the Rev of the ask's Scopes the person chose from; a
	// scope chosen from scopes judged again since is refused.
	ScopesRev int
	// DenyFor denies for the whole root session (decision 0104): the ask is
	// denied with Reason (required), and the surface and pattern are
	// recorded so later asks of the session they cover are denied with it.
	// It must cover this ask. State is denied_with_reason.
	DenyFor *wire.Grant
	// Unattended: no person decided; the ask is refused for want of an
	// approver (headless), or of a decision the relay could use. Only a
	// denial may be unattended, and it goes on the wire as decidedBy
	// {kind:"unavailable", reason: Reason, else NoApproverReason}, never as
	// a user's choice.
	Unattended bool
	// Approver names where a person decided other than this console: a
	// hub approver's credentials, or web:<link id> for the approve page
	// (decision 0183). It is recorded in the audit record, never sent to
	// the child.
	Approver string
}

// Event is something the serving loop reports to its front end (console or
// headless printer). Events are values; front ends never reach back into the
// loop except through Server methods.
type Event interface{ event() }

// AskQueued: a request whose verdict is ask now waits for a person.
type AskQueued struct{ Ask Ask }

// Decided: a response was written (auto by rule or grant, or by a person).
type Decided struct {
	Ask      Ask
	Response wire.Response
	Auto     bool          // decided by recorded authority, not a person
	Latency  time.Duration // arrival to response written
	Approver string        // Decision.Approver: the hub approver or approve page, if any
	// Replayed: answered with the decision an earlier run recorded for this
	// request (decision 0054), not judged again.
	Replayed bool
	// Queued: the ask had been queued for a person (AskQueued), so a
	// front end must take it off its queue.
	Queued bool
}

// Skipped counts the events a stalled front end was not sent one by one
// (EventQueue): arrivals, answers to asks it was not sent, by who decided
// (Approved and Denied a person, or nobody attached, as Decided.Auto
// false; AutoApproved and AutoDenied the recorded authority), asks that
// expired before it was sent them, and refused files. Each is in the
// audit log or permtui.log.
type Skipped struct {
	Arrived, Approved, Denied, AutoApproved, AutoDenied, Expired, Invalid int
	// Unavailable: denials nobody made (decidedBy unavailable), counted
	// apart from a person's as the status counts them unfolded.
	Unavailable int
}

func (s Skipped) add(o Skipped) Skipped {
	return Skipped{s.Arrived + o.Arrived, s.Approved + o.Approved, s.Denied + o.Denied,
		s.AutoApproved + o.AutoApproved, s.AutoDenied + o.AutoDenied, s.Expired + o.Expired, s.Invalid + o.Invalid,
		s.Unavailable + o.Unavailable}
}

func (Skipped) event() {}

// Withdrawn: the request file vanished before it was answered (the child gave
// up or timed out). A pending ask is now expired.
type Withdrawn struct {
	inbox.Withdrawn
	Pending bool // it was waiting for a person
	// Why: at a hub, why the approver let go of it when its relay did not
	// withdraw it (it moved to another host; its relay no longer has it).
	Why string
	// Rejudged: over a hub, its relay judged again what its grants reach
	// (a policy reload) and sends it as a new ask (decision 0246).
	Rejudged bool
}

// Invalid: a request file was rejected (and deleted, as the spec says).
type Invalid struct{ inbox.Invalid }

// ServedElsewhere: another live node publishes a fresh heartbeat for this id,
// so permtui does not serve it (and checks again later).
type ServedElsewhere struct{ inbox.ServedElsewhere }

// Forgotten: discovery stopped serving this id (its directory is gone, or
// it was idle and made room for a session with a request waiting).
type Forgotten struct{ inbox.Forgotten }

func (Forgotten) event() {}

// Serving: permtui now serves this id and publishes its heartbeat.
type Serving struct{ inbox.Serving }

// PolicyStatus: the policy was (re)loaded; Problems lists invalid files and
// other load issues in plain words (empty when all is well).
type PolicyStatus struct {
	Problems []string
	// NoAutoAllow: while any file is unusable nothing is allowed
	// automatically; allows go to a person, denies stand (decision 0052).
	NoAutoAllow bool
	// NoFile, when not empty, says that no policy file was found and where
	// permtui looked: a mistyped --agent-dir looks like a healthy policy.
	NoFile string
	// ProjectFiles are the project's policy files in force; none when the
	// project has none or is left out (--untrusted-project).
	ProjectFiles []string
	// ProjectAllowsHeld: the project is not trusted, so an allow only its
	// files give goes to a person (decision 0206).
	ProjectAllowsHeld bool
}

// WriteFailed: a response could not be written; the request is kept and the
// write is retried without asking a person again.
type WriteFailed struct {
	Ask AskID
	Err string
	// Unread: no fault; a file its child has not taken is in responses/
	// under the request's id, which permtui never replaces (decision
	// 0201). Err says whose it most likely is.
	Unread bool
}

// History: the last decisions recorded by earlier runs (at most
// HistoryCap, oldest first), sent once at start from the audit log.
type History struct{ Records []AuditRecord }

// GrantsChanged: the whole-session grants now in force, per served session.
type GrantsChanged struct{ Grants map[string][]wire.Grant }

// Scanned: every ask the inbox's first look found is judged, those waiting
// for a person sent as AskQueued before it. Whole: every request on disk
// was delivered then, none waits on disk (a relay then knows what its
// previous process left at the hub is gone, decision 0275).
type Scanned struct{ Whole bool }

// ScopesChanged: a policy reload changed the scopes an ask waiting for a
// person offers (what their grants reach); Scopes are the current ones.
type ScopesChanged struct {
	Ask    AskID
	Scopes Scopes
}

// SessionDeny is a person's deny for a whole root session (decision 0104).
type SessionDeny = grants.Deny

// DeniesChanged: the session denies now in force, per served session.
type DeniesChanged struct{ Denies map[string][]SessionDeny }

// Areas of permtui's own state that Degraded and Repaired name.
const (
	AreaAudit     = "audit"
	AreaGrants    = "grants"
	AreaDiscovery = "discovery"
	AreaMemory    = "memory"
)

// Degraded: part of permtui's own state is unusable (Problem says how and
// what it means for answers), or usable again (Problem empty).
type Degraded struct{ Area, Problem string }

// Repaired: permtui found damaged state at open and repaired it; What says
// what was found and where the damaged bytes were kept.
type Repaired struct{ Area, What string }

func (Degraded) event()        {}
func (Repaired) event()        {}
func (AskQueued) event()       {}
func (Decided) event()         {}
func (Withdrawn) event()       {}
func (Invalid) event()         {}
func (ServedElsewhere) event() {}
func (Serving) event()         {}
func (PolicyStatus) event()    {}
func (WriteFailed) event()     {}
func (GrantsChanged) event()   {}
func (History) event()         {}
func (DeniesChanged) event()   {}
func (ScopesChanged) event()   {}
func (Scanned) event()         {}

// Arrived: a request reached the serving loop and was judged; it is followed
// by Decided (auto), AskQueued (a person decides) or Withdrawn.
type Arrived struct{ Ask Ask }

func (Arrived) event() {}
