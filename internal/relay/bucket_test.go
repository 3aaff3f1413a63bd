package relay

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// Adversarial pass adv2, F2 and F10: approver credentials wrote * * into
// the grants bucket and the relay applied it, approving rm -rf /home with
// no record of who granted it; a revocation at a hub console left no
// record on the relay. A relay applies from the bucket only the grants it
// recorded, across a restart too, and records the bucket's revocations
// in its audit log (decision 0247).
func TestTheGrantsBucketOnlyNarrowsWhatTheRelayRecorded(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")

	first := alpha.ask(bash("alpha", 1, "npm test"))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-1").ID, Scope: serve.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, first); !resp.Approved {
		t.Fatalf("%+v", resp)
	}
	recorded := alpha.audit()[0].Grants
	ann.events.WaitFor(t, "the grant in the bucket", func(ev serve.Event) bool {
		g, ok := ev.(serve.GrantsChanged)
		return ok && slices.Equal(g.Grants[rootID], recorded)
	})
	alpha.stop()
	alpha.start(th)
	// Recorded before the restart, it applies again.
	if resp := answered(t, alpha.ask(bash("alpha", 2, "npm test"))); !resp.Approved || resp.DecidedBy.Kind != wire.DecidedByRule {
		t.Fatalf("after a restart: %+v", resp)
	}

	everything := wire.Grant{Surface: "*", Pattern: "*"}
	asApprover(t, th, "alpha", func(l []wire.Grant) []wire.Grant { return merge(l, []wire.Grant{everything}) })
	alpha.ignores(t, everything)
	rm := alpha.ask(bash("alpha", 3, "rm -rf /home"))
	if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, "alpha-3").ID, State: wire.StateDenied}); err != nil {
		t.Fatal(err)
	}
	if resp := answered(t, rm); resp.Approved {
		t.Fatalf("approved by a grant nobody decided: %+v", resp)
	}

	if err := ann.RevokeGrant(rootID, recorded[0]); err != nil {
		t.Fatal(err)
	}
	alpha.events.WaitFor(t, "alpha revoked", func(ev serve.Event) bool {
		g, ok := ev.(serve.GrantsChanged)
		return ok && len(g.Grants[rootID]) == 0
	})
	alpha.stop() // its audit log written
	revoked := slices.DeleteFunc(alpha.auditWith(serve.ReadAuditHistory), func(r serve.AuditRecord) bool { return r.Kind != serve.AuditRevoked })
	if len(revoked) != 1 || !slices.Equal(revoked[0].Grants, recorded) || revoked[0].Reason != serve.HubRevocation {
		t.Fatalf("revocations recorded: %+v", revoked)
	}
	// Revoked, it is not the relay's any more: written back, it is ignored.
	alpha.start(th)
	asApprover(t, th, "alpha", func([]wire.Grant) []wire.Grant { return recorded })
	alpha.ignores(t, recorded[0])
}

// asApprover changes host's grants of rootID in the bucket with approver
// ann's credentials, as a revocation at a console writes them.
func asApprover(t *testing.T, th *testHub, host string, change func([]wire.Grant) []wire.Grant) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	kv, err := th.jetStream(t, hub.RoleApprover, "ann").KeyValue(ctx, hub.GrantsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := updateGrants(ctx, kv, host, rootID, change); err != nil {
		t.Fatal(err)
	}
}

// Left by s19: a grant written into the bucket with approver credentials is
// not applied (0247), yet a hub console counted and listed it. A console
// lists the grants its relays publish as applied, which approver
// credentials cannot write, so it never shows one (decision 0274); a
// grant a person decides is listed, and one revoked there goes.
func TestAHubConsoleListsOnlyTheGrantsRelaysApply(t *testing.T) {
	th := startHub(t)
	alpha := newRelay(t, th, "alpha")
	ann := newApprover(t, th, "ann")
	sessionGrant := func(i int, command string) []wire.Grant {
		t.Helper()
		c := alpha.ask(bash("alpha", i, command))
		if err := ann.decide(t, serve.Decision{Ask: ann.queued(t, fmt.Sprintf("alpha-%d", i)).ID, Scope: serve.ScopeSession}); err != nil {
			t.Fatal(err)
		}
		if resp := answered(t, c); !resp.Approved {
			t.Fatalf("%+v", resp)
		}
		return alpha.audit()[i-1].Grants
	}
	listed := func(what string, want []wire.Grant) {
		t.Helper()
		ann.events.WaitFor(t, what, func(ev serve.Event) bool {
			g, ok := ev.(serve.GrantsChanged)
			return ok && slices.Equal(g.Grants[rootID], want)
		})
	}
	first := sessionGrant(1, "npm test")
	listed("the grant decided", first)

	everything := wire.Grant{Surface: "*", Pattern: "*"}
	asApprover(t, th, "alpha", func(l []wire.Grant) []wire.Grant { return merge(l, []wire.Grant{everything}) })
	alpha.ignores(t, everything)
	// Nor can approver credentials write the list consoles show; a
	// refused publish is never acknowledged.
	data, err := json.Marshal(grantsMsg{Session: rootID, Grants: []wire.Grant{everything}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = th.jetStream(t, hub.RoleApprover, "ann").Publish(ctx, hub.GrantSubjectPrefix+hub.AppliedKey("alpha", rootID), data)
	cancel()
	if err == nil {
		t.Fatal("approver credentials wrote the grants alpha applies")
	}
	both := append(slices.Clone(first), sessionGrant(2, "git status")...)
	listed("the second grant decided", both)
	if n := ann.events.Count(func(ev serve.Event) bool {
		g, ok := ev.(serve.GrantsChanged)
		return ok && slices.Contains(g.Grants[rootID], everything)
	}); n != 0 {
		t.Fatalf("the console listed * * %d times", n)
	}
	if err := ann.RevokeGrant(rootID, first[0]); err != nil {
		t.Fatal(err)
	}
	listed("the revocation", both[1:])
}
