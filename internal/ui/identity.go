package ui

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/permtui/permtui/internal/serve"
)

// An ask's identity is what makes two asks the same question: everything
// its detail shows but the request id and the times (decision 0151). It is
// kept as one digest per part, computed once when the ask arrives (values
// and payloads may be hundreds of KiB, and every frame compares the
// highlighted ask with the whole queue), so the first a can say in which
// part a near-identical ask differs.
type identityPart int

const (
	partQuestion identityPart = iota // agent, surface and values: "similar" when only these agree
	partSession                      // requester, principal and served session, host
	partCwd
	partUnits // floors and asking units
	partPayload
	partScopes
	partWhy // the verdict the detail shows
	numParts
)

var partNames = [numParts]string{"agent and values", "session", "cwd", "floors and units", "payload", "scopes offered", "why"}

type askIdentity [numParts][sha256.Size]byte

func identity(a serve.Ask) askIdentity {
	r := a.Request
	var id askIdentity
	digest := func(p identityPart, parts ...any) { id[p] = sha256.Sum256(fmt.Appendf(nil, "%q", parts)) }
	jsonDigest := func(p identityPart, v any) {
		b, err := json.Marshal(v)
		if err != nil { // never for these types; distinct rather than equal
			b = fmt.Appendf(nil, "%p", &a)
		}
		id[p] = sha256.Sum256(b)
	}
	digest(partSession, r.RequesterSessionID, a.Session, a.Host)
	jsonDigest(partPayload, []any{r.Payload, r.Message, r.Dropped, r.Source})
	jsonDigest(partScopes, []any{a.Scopes, r.SessionApproval})
	jsonDigest(partWhy, a.Verdict)
	ai := r.AccessIntent
	if ai == nil {
		digest(partQuestion, "display", r.RequesterAgentName, deref(r.Surface), deref(r.Value))
		return id
	}
	digest(partQuestion, append([]string{"intent", ai.Principal.AgentName, r.RequesterAgentName, ai.Surface,
		deref(r.Surface), deref(r.Value), deref(ai.BoundaryValue)}, ai.MatchValues...))
	digest(partSession, r.RequesterSessionID, ai.Principal.SessionID, a.Session, a.Host)
	digest(partCwd, ai.RequesterCwd)
	jsonDigest(partUnits, []any{ai.Floor, ai.AskingUnits})
	return id
}

// identicalTargets are the pending shown asks identical to the highlighted
// one, with the words for the status line: what they share, and what the
// similar asks (same agent and values) left unmarked differ in.
func (m *Model) identicalTargets() ([]serve.AskID, string) {
	cur := m.answerable()
	if cur == nil {
		return nil, ""
	}
	var keys []serve.AskID
	similar := 0
	var why []string
	for _, e := range m.shown() {
		switch {
		case e.state != statePending:
		case e.same == cur.same:
			keys = append(keys, e.ask.ID)
		case e.same[partQuestion] == cur.same[partQuestion]:
			similar++
			for p := range numParts {
				if e.same[p] != cur.same[p] && !slices.Contains(why, partNames[p]) {
					why = append(why, partNames[p])
				}
			}
		}
	}
	what := "approve once the " + plural(len(keys), "identical ask") + " marked ≡ (same " + strings.Join(partNames[:], ", ") + ")"
	if similar > 0 {
		what += "; " + plural(similar, "similar ask differs", "similar asks differ") + " (" + strings.Join(why, ", ") + ") and " +
			map[bool]string{true: "is", false: "are"}[similar == 1] + " not marked"
	}
	return keys, what
}
