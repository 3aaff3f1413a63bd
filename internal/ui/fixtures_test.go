package ui

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// Fixed clock: every fixture was created shortly before it.
var testNow = time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)

const (
	rootSession  = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	childSession = "0199a1b2-ffff-7000-8000-000000000042"
)

func sp(s string) *string { return &s }

func ms(t time.Time) float64 { return float64(t.UnixMilli()) }

// ask is one delivery of a fixture. Its AskID comes from the file name, so
// every call of one fixture names the same delivery; a test that needs
// another delivery of it changes the ID.
func ask(file string, r *wire.Request, v resolve.Verdict) serve.Ask {
	h := fnv.New64a()
	h.Write([]byte(file))
	return serve.Ask{
		Arrived: inbox.Arrived{
			ID:      serve.AskID(h.Sum64() >> 1),
			Session: rootSession,
			Path:    "/fwd/sessions/" + rootSession + "/requests/" + file,
			Request: r,
			At:      time.UnixMilli(int64(r.CreatedAt)),
		},
		Verdict: v,
		Scopes:  serve.OfferedScopes(r, nil),
	}
}

func withdrawn(id serve.AskID, pending bool) serve.Withdrawn {
	return serve.Withdrawn{Withdrawn: inbox.Withdrawn{ID: id, Session: rootSession}, Pending: pending}
}

func askVerdict(why string) resolve.Verdict {
	return resolve.Verdict{Action: resolve.Ask, Explanation: why}
}

// legacyBash is what a 20.7.3 child writes: a pre-rendered message, a
// legacy session suggestion and no accessIntent.
func legacyBash() serve.Ask {
	created := testNow.Add(-95 * time.Second)
	r := &wire.Request{
		ID:                 "1796233105000-iqzpq54e-48211",
		CreatedAt:          ms(created),
		RequesterSessionID: childSession,
		TargetSessionID:    rootSession,
		RequesterAgentName: "builder",
		Source:             wire.SourceToolCall,
		Surface:            sp("bash"),
		Value:              sp("npm run build"),
		Message:            sp("Agent builder wants to run:\n  npm run build\nAllow?"),
		SessionApproval:    &wire.SessionApproval{Grants: []wire.Grant{{Surface: "bash", Pattern: "npm run build*"}}, Legacy: true},
	}
	return ask(r.ID+".json", r, askVerdict("The request carries no accessIntent, so a person decides (ADR 0008)."))
}

// pathWrite is the newest child writing inside its worktree, with payload
// and a whole-session suggestion.
func pathWrite() serve.Ask {
	created := testNow.Add(-30 * time.Second)
	r := &wire.Request{
		ID:                 "1796233170000-k2j9x0aa-48311",
		CreatedAt:          ms(created),
		RequesterSessionID: childSession,
		TargetSessionID:    rootSession,
		RequesterAgentName: "reviewer",
		Source:             wire.SourceToolCall,
		Surface:            sp("write"),
		Value:              sp("/w/p/src/app.ts"),
		SessionApproval:    &wire.SessionApproval{Grants: []wire.Grant{{Surface: "path_write", Pattern: "/w/p/src/*"}}},
		AccessIntent: &wire.AccessIntent{
			Surface:       "path_write",
			MatchValues:   []string{"/w/p/src/app.ts", "src/app.ts"},
			BoundaryValue: sp("/w/p/src/app.ts"),
			RequesterCwd:  "/w/p",
			Principal:     wire.Principal{SessionID: childSession, AgentName: "reviewer"},
		},
		Payload: &wire.Payload{
			Kind: "path",
			Request: wire.PayloadRequest{
				Requester: wire.PayloadRequester{AgentName: sp("reviewer")},
				Surface:   "path_write",
				ToolName:  sp("write"),
				Value:     "/w/p/src/app.ts",
			},
			Evidence:    []wire.Evidence{{Label: "input", Text: "export const x = 1;"}},
			Annotations: []wire.Annotation{{Source: "judge", Text: "Writes application source inside the worktree."}},
		},
	}
	return ask(r.ID+".json", r, askVerdict("No rule decides path_write for agent reviewer; the default is ask."))
}

// bashChain is a chain with a floor and two asking units.
func bashChain() serve.Ask {
	created := testNow.Add(-10 * time.Second)
	cmd := "cd /w/p && git push --force origin main && eval \"$DEPLOY\""
	r := &wire.Request{
		ID:                 "1796233190000-77yy01zz-48411",
		CreatedAt:          ms(created),
		RequesterSessionID: childSession,
		TargetSessionID:    rootSession,
		RequesterAgentName: "deployer",
		Source:             wire.SourceToolCall,
		Surface:            sp("bash"),
		Value:              sp(cmd),
		SessionApproval: &wire.SessionApproval{Grants: []wire.Grant{
			{Surface: "bash", Pattern: "git push *"}, {Surface: "bash", Pattern: "eval *"}}},
		AccessIntent: &wire.AccessIntent{
			Surface:       "bash",
			MatchValues:   []string{"git push --force origin main"},
			BoundaryValue: nil,
			Floor:         sp("<indirection-bash-wrapper>"),
			AskingUnits: []wire.AskingUnit{
				{Command: "git push --force origin main"},
				{Command: "eval \"$DEPLOY\"", Floor: sp("<indirection-bash-wrapper>")},
			},
			RequesterCwd: "/w/p",
			Principal:    wire.Principal{SessionID: childSession, AgentName: "deployer"},
		},
		Payload: &wire.Payload{
			Kind: "bash",
			Request: wire.PayloadRequest{
				Surface:        "bash",
				ToolName:       sp("bash"),
				Value:          cmd,
				MatchedPattern: sp("<indirection-bash-wrapper>"),
				ExecutedUnit:   sp("eval \"$DEPLOY\""),
			},
			Evidence: []wire.Evidence{{Label: "full command", Text: cmd}, {Label: "working directory", Text: "/w/p"}},
		},
	}
	v := askVerdict("Unit 2 (eval \"$DEPLOY\") carries the floor <indirection-bash-wrapper>, so the allow rule cannot decide it.")
	v.Floor = "<indirection-bash-wrapper>"
	v.Unit = "eval \"$DEPLOY\""
	v.Rule = &resolve.RuleRef{Surface: "bash", Pattern: "*", Action: resolve.Allow, Origin: "global",
		File: "/home/u/.pi/agent/pi-permissions.jsonc", Index: 3}
	return ask(r.ID+".json", r, v)
}

// externalRead reads from another worktree; its grant can be widened.
func externalRead() serve.Ask {
	created := testNow.Add(-5 * time.Second)
	r := &wire.Request{
		ID:                 "1796233195000-abcd1234-48511",
		CreatedAt:          ms(created),
		RequesterSessionID: childSession,
		TargetSessionID:    rootSession,
		RequesterAgentName: "reviewer",
		Source:             wire.SourceToolCall,
		Surface:            sp("read"),
		Value:              sp("/w/other/README.md"),
		SessionApproval:    &wire.SessionApproval{Grants: []wire.Grant{{Surface: "external_directory_read", Pattern: "/w/other/*"}}},
		AccessIntent: &wire.AccessIntent{
			Surface:       "external_directory_read",
			MatchValues:   []string{"/w/other/README.md", "/srv/checkouts/other/README.md"},
			BoundaryValue: sp("/srv/checkouts/other/README.md"),
			RequesterCwd:  "/w/p",
			Principal:     wire.Principal{SessionID: childSession, AgentName: "reviewer"},
		},
	}
	return ask(r.ID+".json", r, askVerdict("external_directory_read is ask for agent reviewer (global rule)."))
}

// noSuggestion is a path ask without sessionApproval.
func noSuggestion() serve.Ask {
	a := pathWrite()
	a.ID++
	a.Request.SessionApproval = nil
	a.Scopes = serve.OfferedScopes(a.Request, nil)
	return a
}

// hostile carries every trick a child could try on the console.
func hostile() serve.Ask {
	created := testNow.Add(-20 * time.Second)
	value := "ls \x1b]52;c;cm0gLXJmIH4=\x07; rm -rf ~ \x1b[8mhidden\x1b[0m\u202egnp.exe\u202c\nsecond line\tend\u009b31m"
	r := &wire.Request{
		ID:                 "1796233180000-evil0000-66666",
		CreatedAt:          ms(created),
		RequesterSessionID: childSession + "\x1b[2J",
		TargetSessionID:    rootSession,
		RequesterAgentName: "evil\u2066agent\u2069",
		Source:             wire.SourceToolCall,
		Surface:            sp("bash"),
		Value:              sp(value),
		AccessIntent: &wire.AccessIntent{
			Surface:      "bash",
			MatchValues:  []string{value},
			RequesterCwd: "/w/p\x1bP+q\x1b\\",
			Principal:    wire.Principal{SessionID: childSession + "\x1b[2J", AgentName: "evil\u2066agent\u2069"},
		},
		Payload: &wire.Payload{
			Kind:        "bash",
			Request:     wire.PayloadRequest{Surface: "bash", Value: value},
			Annotations: []wire.Annotation{{Source: "judge\x07", Text: "Safe.\x1b_apc\x1b\\ \x9d0;title\x9c"}},
		},
		Dropped: []wire.DroppedField{{Field: "sessionApproval", Reason: "grants[0].surface is empty\r\x1b[1A"}},
	}
	return ask(r.ID+".json", r, askVerdict("No rule decides bash for this agent."))
}

// fakeBackend records calls; decideErr, when set, answers every Decide.
type fakeBackend struct {
	mu        sync.Mutex
	decisions []serve.Decision
	revoked   []revocation
	// revokedDenies are the session denies revoked (surface and pattern).
	revokedDenies []revocation
	decideErr     error
	reach         func(serve.AskID, serve.ScopeKind, []wire.Grant) ([]serve.Reach, bool)
}

type revocation struct {
	session string
	grant   wire.Grant
}

func (b *fakeBackend) Decide(d serve.Decision) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.decisions = append(b.decisions, d)
	return b.decideErr
}

func (b *fakeBackend) RevokeGrant(session string, g wire.Grant) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.revoked = append(b.revoked, revocation{session, g})
	return nil
}

func (b *fakeBackend) RevokeDeny(session string, d serve.SessionDeny) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.revokedDenies = append(b.revokedDenies, revocation{session, d.Grant})
	return nil
}

var errExpired = fmt.Errorf("request withdrawn: %w", serve.ErrExpired)

// noFiles stands in for the disk in previews: every file is new.
func noFiles(string) ([]byte, error) { return nil, fs.ErrNotExist }

// EditReach judges an edit as serve does when reach is set (a console
// with the policy); otherwise the ask is not open here (a hub console).
func (b *fakeBackend) EditReach(id serve.AskID, kind serve.ScopeKind, gs []wire.Grant) ([]serve.Reach, bool) {
	if b.reach == nil {
		return nil, false
	}
	return b.reach(id, kind, gs)
}
