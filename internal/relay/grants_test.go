package relay

import (
	"slices"
	"testing"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// The grants bucket's list for a session can arrive while a grant this
// relay's server recorded is still on its way to the bucket (queued, or
// being written): the list does not have it yet, and replacing the
// relay's view with it lost a person's grant. Each step below is one
// ordering of that race, played in turn.
func TestAGrantNotYetInTheBucketIsKept(t *testing.T) {
	a, b, c := wire.Grant{Surface: "bash", Pattern: "npm test *"}, wire.Grant{Surface: "bash", Pattern: "make *"}, wire.Grant{Surface: "read", Pattern: "*"}
	g := NewGrants()
	recordedBefore(g, b, c) // by this relay, before a restart
	want := func(step string, grants ...wire.Grant) {
		t.Helper()
		if got := g.For(rootID); !sameGrants(got, grants) {
			t.Fatalf("%s: grants %v, want %v", step, got, grants)
		}
	}
	if err := g.Add(rootID, []wire.Grant{a}); err != nil {
		t.Fatal(err)
	}
	g.set(rootID, []wire.Grant{b, c}, 3) // written before this one was sent
	want("queued", a, b, c)
	unsent := g.takeUnsent()
	g.set(rootID, []wire.Grant{b, c}, 4) // while it is being written
	want("being written", a, b, c)
	g.putBack(rootID, unsent[rootID]) // the write failed
	g.set(rootID, []wire.Grant{b}, 5) // c revoked at a console
	want("put back; c revoked", a, b)
	g.takeUnsent()
	if changed, _ := g.written(rootID, []wire.Grant{a}, 7); changed {
		t.Fatal("a write the bucket has not shown yet changed the grants")
	}
	g.set(rootID, []wire.Grant{b}, 6) // a change older than the write
	want("written, an older list seen", a, b)
	g.set(rootID, []wire.Grant{b}, 8) // a revoked after the write
	want("revoked after the write", b)
}

// A revocation that the bucket shows before the relay's writer learns its
// write was taken still wins once the writer does.
func TestARevocationSeenBeforeTheWriteIsConfirmedWins(t *testing.T) {
	a, b := wire.Grant{Surface: "bash", Pattern: "npm test *"}, wire.Grant{Surface: "bash", Pattern: "make *"}
	g := NewGrants()
	recordedBefore(g, b)
	if err := g.Add(rootID, []wire.Grant{a}); err != nil {
		t.Fatal(err)
	}
	g.takeUnsent()
	g.set(rootID, []wire.Grant{b}, 11) // written at 10, revoked at 11, 10 never seen
	if got := g.For(rootID); !sameGrants(got, []wire.Grant{a, b}) {
		t.Fatalf("before the write is confirmed: %v", got)
	}
	if changed, revoked := g.written(rootID, []wire.Grant{a}, 10); !changed || !slices.Equal(revoked, []wire.Grant{a}) {
		t.Fatal("the revocation's removal was not reported as a change")
	}
	if got := g.For(rootID); !sameGrants(got, []wire.Grant{b}) {
		t.Fatalf("after: %v", got)
	}
	// Seen in the bucket, a grant is the bucket's: a later list without it
	// is a revocation, whatever the writer says after.
	if err := g.Add(rootID, []wire.Grant{a}); err != nil {
		t.Fatal(err)
	}
	g.takeUnsent()
	g.set(rootID, []wire.Grant{a, b}, 12)
	g.set(rootID, []wire.Grant{b}, 13)
	g.written(rootID, []wire.Grant{a}, 12)
	if got := g.For(rootID); !sameGrants(got, []wire.Grant{b}) {
		t.Fatalf("revoked once seen: %v", got)
	}
}

// recordedBefore makes grants of rootID g's own, as ReadRecorded does
// with those of an audit log.
func recordedBefore(g *Grants, grants ...wire.Grant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.own[rootID] = merge(g.own[rootID], grants)
}

func sameGrants(got, want []wire.Grant) bool {
	return len(got) == len(want) && !slices.ContainsFunc(want, func(g wire.Grant) bool { return !slices.Contains(got, g) })
}

// A list from the bucket older than an empty one already applied (a stopped
// consumer's last callback overlapping the next one's) does not bring a
// revoked grant back: the empty list keeps its revision (review finding).
func TestAnOlderListDoesNotUndoARevocationToNothing(t *testing.T) {
	a := wire.Grant{Surface: "bash", Pattern: "npm test *"}
	g := NewGrants()
	recordedBefore(g, a)
	g.set(rootID, []wire.Grant{a}, 5)
	g.set(rootID, nil, 7)
	g.set(rootID, []wire.Grant{a}, 5)
	if got := g.For(rootID); len(got) != 0 {
		t.Fatalf("the revoked grant came back: %v", got)
	}
}

// Adversarial pass adv2, F2: a grant in the bucket that this relay never
// recorded (approver credentials may write there) is not applied; one it
// recorded, or read from its audit log after a restart, is, until the
// bucket revokes it, and then not again (decision 0247).
func TestTheBucketOnlyNarrowsARelaysGrants(t *testing.T) {
	everything, npm, make := wire.Grant{Surface: "*", Pattern: "*"}, wire.Grant{Surface: "bash", Pattern: "npm *"}, wire.Grant{Surface: "bash", Pattern: "make *"}
	dir := t.TempDir()
	rules, err := serve.OpenRuleLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.Append(serve.RuleRecord{}); err != nil { // a log with other lines
		t.Fatal(err)
	}
	g := NewGrants()
	if err := g.ReadRecorded(dir); err != nil {
		t.Fatal(err)
	}
	recordedBefore(g, npm, make)
	changed, ignored, _ := g.set(rootID, []wire.Grant{everything, npm}, 3)
	if !changed || !slices.Equal(ignored, []wire.Grant{everything}) || !sameGrants(g.For(rootID), []wire.Grant{npm}) {
		t.Fatalf("applied %v, ignored %v", g.For(rootID), ignored)
	}
	_, _, revoked := g.set(rootID, nil, 4)
	if !slices.Equal(revoked, []wire.Grant{npm}) || len(g.For(rootID)) != 0 {
		t.Fatalf("revoked %v, applied %v", revoked, g.For(rootID))
	}
	if _, ignored, _ := g.set(rootID, []wire.Grant{npm, make}, 5); len(g.For(rootID)) != 0 || len(ignored) != 2 {
		t.Fatalf("written back after their revocation: applied %v", g.For(rootID))
	}
}
