// A person's decisions: Decide turns a console's or an approver's choice
// into an answer (scope, edited grants, session deny), and revocations.

package serve

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// Decide answers an ask a person decided. It returns once the answer is
// durable in the audit log and written, or once a failed write has been
// handed to the background retry (reported by WriteFailed events).
func (s *Server) Decide(d Decision) error {
	p, ans, err := s.take(d)
	if err != nil {
		return err
	}
	defer s.workers.Done()

	// Nothing is audited or granted for a request that is already gone.
	if !s.inbox.Present(p.ID) {
		s.expire(p)
		return ErrExpired
	}
	if err := s.attempt(p, ans); err != nil {
		if errors.Is(err, errGone) {
			return ErrExpired
		}
		s.workers.Add(1)
		go s.retry(p, ans)
	}
	return nil
}

// take marks the ask d decides as deciding and returns its answer. A scope
// choice is judged under the policy outside s.mu (its reach takes
// milliseconds on a large policy, and every other ask waits for s.mu); a
// rejudge meanwhile (a reload, new grants or denies) has it judged again,
// as arrive does (decision 0277).
func (s *Server) take(d Decision) (*pending, *answer, error) {
	var (
		j   *choiceJudgment
		gen uint64
	)
	for {
		s.mu.Lock()
		p := s.asks[d.Ask]
		switch {
		case s.ctx == nil || s.closing:
			s.mu.Unlock()
			return nil, nil, ErrStopped
		case p == nil:
			s.mu.Unlock()
			return nil, nil, ErrUnknownAsk
		case p.deciding:
			s.mu.Unlock()
			return nil, nil, ErrAlreadyDecided
		case d.Scope != "" && (j == nil || s.rejudges.Load() != gen):
			gen = s.rejudges.Load()
			s.mu.Unlock()
			j = judgeChoice(p.Request, d, s.cfg.Judge())
			continue
		}
		ans, err := s.personAnswer(p, d, j)
		if err == nil {
			ans.record.Approver = d.Approver
			p.deciding = true
			s.workers.Add(1)
		}
		s.mu.Unlock()
		return p, ans, err
	}
}

// choiceJudgment is what the policy says of a scope choice: the scope as
// offered now, and whether an edit of its grants may be recorded.
type choiceJudgment struct {
	now     Scope
	offered bool // the scope is offered now
	edit    error
}

// judgeChoice judges d's scope and edit under judge, without s.mu.
func judgeChoice(req *wire.Request, d Decision, judge Judge) *choiceJudgment {
	j := &choiceJudgment{}
	j.now, j.offered = OfferedScopes(req, judge).Find(d.Scope)
	if j.offered && d.Grants != nil && (d.Scope == ScopeSession || d.Scope == ScopeSessionBoth) {
		// The offered grants come from the request, not the policy.
		j.edit = checkEdited(req, d, j.now.Grants, judge)
	}
	return j
}

// personAnswer turns a person's decision into the response and its audit
// record. The wire never sees approved_for_serving_session (ADR 0006). j
// is the judgment of a scope choice.
func (s *Server) personAnswer(p *pending, d Decision, j *choiceJudgment) (*answer, error) {
	resp := wire.Response{DecidedBy: wire.UserDecision()}
	if d.Unattended {
		if d.Scope != "" || (d.State != wire.StateDenied && d.State != wire.StateDeniedWithReason) {
			return nil, fmt.Errorf("%w: only a denial can be made with nobody attached", ErrInvalidDecision)
		}
		// Why nobody decided is the decider's reason: a front end with no
		// person, a relay that could not use the hub's decision.
		resp.DecidedBy = wire.UnavailableDecision(cmp.Or(wire.TrimReason(d.Reason), NoApproverReason))
	}
	if d.Scope != "" {
		return s.scopeAnswer(p, d, resp, j)
	}
	if d.DenyFor != nil {
		return s.sessionDenyAnswer(p, d, resp)
	}
	switch d.State {
	case wire.StateApproved:
		resp.Approved, resp.State = true, wire.StateApproved
	case wire.StateDenied:
		resp.State = wire.StateDenied
	case wire.StateDeniedWithReason:
		resp.State = wire.StateDenied
		if reason := wire.TrimReason(d.Reason); reason != "" {
			resp.State, resp.DenialReason = wire.StateDeniedWithReason, reason
		}
	default:
		return nil, fmt.Errorf("%w: unknown state %q", ErrInvalidDecision, d.State)
	}
	return &answer{record: s.record(p, d.State, resp)}, nil
}

// scopeAnswer approves for one of the scopes the ask offers, doing exactly
// what that scope says (OfferedScopes). The audit record keeps the scope as
// a state: approved_for_session for the subagent, approved_for_serving_session
// for the whole session, which the wire never sees (ADR 0006).
func (s *Server) scopeAnswer(p *pending, d Decision, resp wire.Response, j *choiceJudgment) (*answer, error) {
	scope, ok := p.Scopes.Find(d.Scope)
	if d.State != "" || !ok {
		return nil, fmt.Errorf("%w: scope %q is not offered for this ask", ErrInvalidDecision, d.Scope)
	}
	// Named when offered (Rev): a policy changed since may have made the
	// grants reach further (a deny they would pass), which nobody saw
	// named; the child records a subagent scope's grants as permtui records
	// the whole session's (decision 0229).
	if d.ScopesRev != p.Scopes.Rev || !j.offered || !reflect.DeepEqual(j.now.Wider, scope.Wider) {
		return nil, ErrScopesChanged
	}
	session := d.Scope == ScopeSession || d.Scope == ScopeSessionBoth
	if d.Grants != nil && !session {
		return nil, fmt.Errorf("%w: only a whole-session grant can be edited (the child records its own)", ErrInvalidDecision)
	}
	grants := scope.Grants
	if d.Grants != nil {
		if j.edit != nil {
			return nil, j.edit
		}
		grants = d.Grants
	}
	resp.Approved, resp.State = true, wire.StateApproved
	if session {
		rec := s.record(p, wire.StateApprovedForServingSession, resp)
		rec.Grants = grants
		return &answer{record: rec}, nil
	}
	if !predatesSessionState(p.Request) {
		resp.State = wire.StateApprovedForSession
	}
	if d.Scope == ScopeSubagentBoth {
		resp.SessionGrantWidth = wire.GrantWidthFamily
	}
	rec := s.record(p, wire.StateApprovedForSession, resp)
	rec.ChildGrants = scope.Grants
	return &answer{record: rec}, nil
}

// sessionDenyAnswer denies the ask with the person's reason and records the
// deny for the root session, if it names the ask's surface (or its family)
// and its pattern covers the ask: a deny nobody saw match is refused.
func (s *Server) sessionDenyAnswer(p *pending, d Decision, resp wire.Response) (*answer, error) {
	g, reason := *d.DenyFor, wire.TrimReason(d.Reason)
	ai := p.Request.AccessIntent
	switch {
	case s.cfg.Denies == nil:
		return nil, fmt.Errorf("%w: session denies are not kept here", ErrInvalidDecision)
	case d.Unattended || d.State != wire.StateDeniedWithReason || reason == "":
		return nil, fmt.Errorf("%w: a deny for the session is a person's denial with a reason", ErrInvalidDecision)
	case ai == nil:
		return nil, fmt.Errorf("%w: the request carries no facts, so no later ask could be matched", ErrInvalidDecision)
	case strings.TrimSpace(g.Pattern) == "" || !s.cfg.Judge().Covers(p.Request, g):
		return nil, fmt.Errorf("%w: the deny's surface and pattern do not cover this ask", ErrInvalidDecision)
	}
	if fam, _ := resolve.Family(ai.Surface); g.Surface != ai.Surface && g.Surface != fam {
		return nil, fmt.Errorf("%w: a session deny names the ask's surface %q or its family", ErrInvalidDecision, ai.Surface)
	}
	resp.State, resp.DenialReason = wire.StateDeniedWithReason, reason
	rec := s.record(p, wire.StateDeniedWithReason, resp)
	rec.SessionDeny = &SessionDeny{Grant: g, Reason: reason}
	return &answer{record: rec}, nil
}

// checkEdited accepts a person's edit of a scope's grants only when it keeps
// their surfaces, the policy, judging the ask with exactly those grants,
// allows it (an edited pattern that no longer covers the ask would record a
// grant nobody looked at working), and every deny rule the edit passes,
// judged as an offered scope's reach is, was shown (decision 0259).
func checkEdited(req *wire.Request, d Decision, offered []wire.Grant, judge Judge) error {
	edited := d.Grants
	if len(edited) != len(offered) {
		return fmt.Errorf("%w: %d edited grants for %d offered", ErrInvalidDecision, len(edited), len(offered))
	}
	for i, g := range edited {
		if g.Surface != offered[i].Surface || strings.TrimSpace(g.Pattern) == "" {
			return fmt.Errorf("%w: an edited grant must keep its surface %q and have a pattern", ErrInvalidDecision, offered[i].Surface)
		}
	}
	if v := judge.Resolve(req, edited); v.Action != resolve.Allow {
		return fmt.Errorf("%w: the edited pattern does not cover this ask (the policy says %s with it)", ErrInvalidDecision, v.Action)
	}
	for _, dn := range ShownDenies(EditedReach(req, d.Scope, edited, judge)) {
		if !slices.Contains(d.EditDenies, dn) {
			return fmt.Errorf("%w: the edited pattern passes the deny rule %s %s, which was not named when it was chosen; narrow it or approve once",
				ErrInvalidDecision, dn.Surface, dn.Pattern)
		}
	}
	return nil
}

// EditReach is how a person's edit of an open ask's whole-session grants
// reaches beyond it under the policy in force, judged as the offered
// scopes' reach is; false when the ask is not open here.
func (s *Server) EditReach(id AskID, kind ScopeKind, edited []wire.Grant) ([]Reach, bool) {
	s.mu.Lock()
	p := s.asks[id]
	s.mu.Unlock()
	if p == nil {
		return nil, false
	}
	return EditedReach(p.Request, kind, edited, s.cfg.Judge()), true
}

// EditedReach is how edited, a person's edit of the grants of the scope
// kind, reaches beyond req under judge: the one judgment of an edit, for
// the console that shows it and the server that records it.
func EditedReach(req *wire.Request, kind ScopeKind, edited []wire.Grant, judge Judge) []Reach {
	return reaches(req, edited, judge, kind == ScopeSessionBoth)
}

// ShownDenies are the deny rules, by surface and pattern, that reach names
// the grants pass: what a decision says was shown (Decision.EditDenies).
func ShownDenies(reach []Reach) []wire.Grant {
	var out []wire.Grant
	for _, r := range reach {
		for _, dn := range r.Denies {
			if g := (wire.Grant{Surface: dn.Rule.Surface, Pattern: dn.Rule.Pattern}); !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// exitAnswer denies an ask still open when permtui stops.
func (s *Server) exitAnswer(p *pending) *answer {
	return &answer{record: s.record(p, wire.StateDeniedWithReason, wire.Response{
		State:        wire.StateDeniedWithReason,
		DenialReason: ExitReason,
		DecidedBy:    wire.UnavailableDecision(ExitReason),
	})}
}

// RevokeGrant withdraws a whole-session grant; later asks are judged
// without it.
func (s *Server) RevokeGrant(session string, g wire.Grant) error {
	if err := s.cfg.Grants.Revoke(session, g); err != nil {
		return err
	}
	s.recordRevocation(AuditRecord{ServedSession: session, Surface: g.Surface, Grants: []wire.Grant{g}})
	s.emit(GrantsChanged{Grants: s.cfg.Grants.All()})
	return nil
}

// HubRevocation is the reason of a revocation the server learned of from
// a hub's grants bucket.
const HubRevocation = "revoked at a console attached to the hub"

// GrantsRevoked records whole-session grants revoked outside the server
// (at a hub console, in the hub's grants bucket), as RevokeGrant records
// its own; the store already holds them revoked.
func (s *Server) GrantsRevoked(session string, gs []wire.Grant) {
	for _, g := range gs {
		s.recordRevocation(AuditRecord{ServedSession: session, Surface: g.Surface, Grants: []wire.Grant{g}, Reason: HubRevocation})
	}
}

// recordRevocation notes a revocation in the audit log for the console's
// log after a restart. Like an expiry it decides nothing and is not waited
// for; before Run there is no log to note it in.
func (s *Server) recordRevocation(rec AuditRecord) {
	s.mu.Lock()
	audit := s.audit
	s.mu.Unlock()
	if audit != nil {
		rec.Kind, rec.DecidedAt = AuditRevoked, s.cfg.Now().UnixMilli()
		audit.appendLazy(rec)
	}
}

// RevokeDeny withdraws a session deny; later asks are judged without it.
func (s *Server) RevokeDeny(session string, d SessionDeny) error {
	if s.cfg.Denies == nil {
		return errors.New("serve: session denies are not kept here")
	}
	if err := s.cfg.Denies.RevokeDeny(session, d); err != nil {
		return err
	}
	s.recordRevocation(AuditRecord{ServedSession: session, Surface: d.Grant.Surface, SessionDeny: &d})
	s.emit(DeniesChanged{Denies: s.cfg.Denies.AllDenies()})
	return nil
}
