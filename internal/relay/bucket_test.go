package relay

import (
	"context"
	"slices"
	"testing"

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
	ctx, cancel := context.WithTimeout(context.Background(), testkit.WaitLimit)
	defer cancel()
	kv, err := th.jetStream(t, hub.RoleApprover, "ann").KeyValue(ctx, hub.GrantsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := updateGrants(ctx, kv, "alpha", rootID, func(l []wire.Grant) []wire.Grant { return merge(l, []wire.Grant{everything}) }); err != nil {
		t.Fatal(err)
	}
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
	if _, err := updateGrants(ctx, kv, "alpha", rootID, func([]wire.Grant) []wire.Grant { return recorded }); err != nil {
		t.Fatal(err)
	}
	alpha.ignores(t, recorded[0])
}
