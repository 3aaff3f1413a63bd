package wire

import (
	"regexp"
	"testing"
)

// One ask is one served session, request id, requester session and
// createdAt: a change in any of them is another ask, and the key of a
// request is that of its four fields.
func TestRequestKeyIsTheAsksFourFields(t *testing.T) {
	req := &Request{ID: "r1", RequesterSessionID: "child", CreatedAt: 1.5}
	k := KeyOf("root", req)
	if want := (RequestKey{Session: "root", ID: "r1", Requester: "child", CreatedAt: 1.5}); k != want {
		t.Fatalf("KeyOf = %+v, want %+v", k, want)
	}
	others := []RequestKey{
		{Session: "root2", ID: "r1", Requester: "child", CreatedAt: 1.5},
		{Session: "root", ID: "r2", Requester: "child", CreatedAt: 1.5},
		{Session: "root", ID: "r1", Requester: "child2", CreatedAt: 1.5},
		{Session: "root", ID: "r1", Requester: "child", CreatedAt: 2.5},
		// The parts cannot run into each other.
		{Session: "roo", ID: "tr1", Requester: "child", CreatedAt: 1.5},
		{Session: "root", ID: "r1c", Requester: "hild", CreatedAt: 1.5},
	}
	seen := map[[16]byte]RequestKey{k.Sum(): k}
	for _, o := range others {
		if prev, dup := seen[o.Sum()]; dup {
			t.Errorf("%+v and %+v have one sum", o, prev)
		}
		seen[o.Sum()] = o
	}
	if again := (RequestKey{Session: "root", ID: "r1", Requester: "child", CreatedAt: 1.5}); again.Sum() != k.Sum() || again.String() != k.String() {
		t.Error("the same four fields gave another key")
	}
	// The hub uses String as a subject token and a bucket key.
	if s := k.String(); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(s) {
		t.Fatalf("String = %q, want 32 hex digits", s)
	}
}
