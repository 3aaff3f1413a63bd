package serve

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/wire"
)

// One ask per child version the spec names (wire-protocol §9.1, §13).
type childVersion struct {
	name  string
	build func(id string) *wire.Request
	kinds []ScopeKind
	note  string // part of Scopes.Note; "" means no note
	// caveats maps a kind to part of its Caveat.
	caveats map[ScopeKind]string
}

var childVersions = []childVersion{
	{
		name: "3.x",
		build: func(id string) *wire.Request {
			return &wire.Request{ID: id, CreatedAt: 1791279012345, RequesterSessionID: "c3", TargetSessionID: rootID,
				RequesterAgentName: "old", Source: wire.SourceToolCall, Message: ptr("Agent 'old' wants to run ls")}
		},
		kinds: []ScopeKind{ScopeSubagent},
		note:  "no sessionApproval suggestion",
	},
	{
		name: "20.7.3",
		build: func(id string) *wire.Request {
			r := pichild.LegacyBash(rootID, "impl", "c20", "npm run build")
			r.ID = id
			return r
		},
		kinds:   []ScopeKind{ScopeSubagent, ScopeSession},
		caveats: map[ScopeKind]string{ScopeSession: "its own later asks still come here"},
	},
	{
		name: "20.8",
		build: func(id string) *wire.Request {
			r := intent(id, "impl", "path_write", "/w/src/a.ts", wire.Grant{Surface: "path_write", Pattern: "/w/src/*"})
			r.SessionApproval.Legacy = true
			return r
		},
		kinds: []ScopeKind{ScopeSubagent, ScopeSession, ScopeSessionBoth},
		note:  "cannot read a grant width",
	},
	{
		name: "newest",
		build: func(id string) *wire.Request {
			return intent(id, "impl", "path_write", "/w/src/a.ts", wire.Grant{Surface: "path_write", Pattern: "/w/src/*"})
		},
		kinds:   []ScopeKind{ScopeSubagent, ScopeSubagentBoth, ScopeSession, ScopeSessionBoth},
		caveats: map[ScopeKind]string{ScopeSubagentBoth: "before pi 30.2"},
	},
	{
		name: "40.x",
		build: func(id string) *wire.Request {
			return intent(id, "impl", "bash", "nohup mytool x", wire.Grant{Surface: "bash", Pattern: "nohup mytool *"})
		},
		kinds: []ScopeKind{ScopeSubagent, ScopeSession},
	},
}

func TestOfferedScopesForEveryChildVersion(t *testing.T) {
	for _, v := range childVersions {
		t.Run(v.name, func(t *testing.T) {
			got := OfferedScopes(v.build("1791279012345-v-1"), nil)
			var kinds []ScopeKind
			for _, o := range got.Options {
				kinds = append(kinds, o.Kind)
				if want := v.caveats[o.Kind]; !strings.Contains(o.Caveat, want) || (want == "" && o.Caveat != "") {
					t.Errorf("%s caveat %q, want %q", o.Kind, o.Caveat, want)
				}
			}
			if !reflect.DeepEqual(kinds, v.kinds) {
				t.Fatalf("kinds %v, want %v", kinds, v.kinds)
			}
			if !strings.Contains(got.Note, v.note) || (v.note == "" && got.Note != "") {
				t.Fatalf("note %q, want %q", got.Note, v.note)
			}
		})
	}
}

// Each offered scope does what it says: the response the child gets, and the
// grants permtui records (exactly the scope's Grants for the whole session,
// none for the subagent, whose child records them).
func TestEveryOfferedScopeDoesWhatItSays(t *testing.T) {
	h := startServer(t, options{})
	n := 0
	for _, v := range childVersions {
		for _, kind := range v.kinds {
			n++
			id := fmt.Sprintf("1791279012345-sc-%d", n)
			t.Run(v.name+"/"+string(kind), func(t *testing.T) {
				before := h.grants.For(rootID)
				h.send(v.build(id))
				ask := h.queued(id)
				scope, _ := ask.Scopes.Find(kind)
				if err := h.s.Decide(Decision{Ask: ask.ID, Scope: kind}); err != nil {
					t.Fatal(err)
				}
				resp := h.await(id)
				wantState, wantWidth := wire.StateApproved, wire.GrantWidthProven
				var wantGrants []wire.Grant
				switch {
				case kind == ScopeSession || kind == ScopeSessionBoth:
					wantGrants = scope.Grants
					if !strings.HasPrefix(scope.Effect, "permtui records") {
						t.Fatalf("effect %q", scope.Effect)
					}
				case v.name == "3.x":
					if !strings.Contains(scope.Effect, "answered as approve once; nothing is recorded") {
						t.Fatalf("effect %q", scope.Effect)
					}
				default:
					wantState = wire.StateApprovedForSession
					if kind == ScopeSubagentBoth {
						wantWidth = wire.GrantWidthFamily
					}
					if scope.Effect != "the child records" || len(scope.Grants) == 0 {
						t.Fatalf("effect %q grants %v", scope.Effect, scope.Grants)
					}
				}
				if !resp.Approved || resp.State != wantState || resp.GrantWidth != wantWidth {
					t.Fatalf("response %+v, want %s width %s", resp, wantState, wantWidth)
				}
				if added := h.grants.For(rootID)[len(before):]; !reflect.DeepEqual(added, wantGrants) && len(added)+len(wantGrants) > 0 {
					t.Fatalf("recorded %v, want %v", added, wantGrants)
				}
			})
		}
	}

	// The 20.7.3 caveat holds: its own next ask still comes to a person; the
	// 40.x suggestion was recorded verbatim and covers only its own tool.
	h.send(childVersions[1].build("1791279012345-sc-legacy-again"))
	h.queued("1791279012345-sc-legacy-again")
	h.send(intent("1791279012345-sc-nohup-y", "impl", "bash", "nohup mytool y"))
	if d := h.decided("1791279012345-sc-nohup-y"); !d.Auto || !d.Response.Approved {
		t.Fatalf("nohup mytool y: %+v", d)
	}
	h.send(intent("1791279012345-sc-other", "impl", "bash", "nohup othertool x"))
	h.queued("1791279012345-sc-other")
}
