package resolve

import (
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

// A legacy request (no accessIntent) is never decided, but the policy's
// reading of its surface and value is offered as a hint; a request with
// facts, or without a legacy surface, has none.
func TestLegacyHint(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":{"rm *":{"action":"deny","reason":"no rm"}}}}`)
	p := Load(f.opts)
	legacy := &wire.Request{ID: "r", RequesterAgentName: "impl", Surface: new("bash"), Value: new("rm -rf x")}
	if v := p.Resolve(legacy, nil); v.Action != Ask || v.Rule != nil {
		t.Fatalf("a legacy request was decided: %+v", v)
	}
	h := p.LegacyHint(legacy, nil)
	if h == nil || h.Action != Deny || h.Reason != "no rm" || !strings.Contains(h.Explanation, `"rm *"`) {
		t.Fatalf("hint %+v", h)
	}
	withFacts := &wire.Request{ID: "r", Surface: new("bash"), Value: new("rm x"), AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{"rm x"}}}
	if h := p.LegacyHint(withFacts, nil); h != nil {
		t.Errorf("a request with facts got a hint: %+v", h)
	}
	if h := p.LegacyHint(&wire.Request{ID: "r"}, nil); h != nil {
		t.Errorf("a request without a legacy surface got a hint: %+v", h)
	}
}

// A request without facts asks a person, and says why: no accessIntent, or
// one the reader dropped as malformed, with the reader's reason shown
// printable.
func TestResolveWithoutFactsSaysWhy(t *testing.T) {
	p := Load(newFixture(t).opts)
	const tail = "), and recorded policy never auto-answers a request without facts (pi-permission-system's ADR 0008 §4)."
	for _, c := range []struct {
		req  *wire.Request
		want string
	}{
		{nil, "Ask. A person decides: the request carries no facts (no accessIntent" + tail},
		{&wire.Request{ID: "r"}, "Ask. A person decides: the request carries no facts (no accessIntent" + tail},
		{&wire.Request{ID: "r", Dropped: []wire.DroppedField{{Field: "accessIntent", Reason: "bad\x1bsurface"}}},
			`Ask. A person decides: the request carries no facts (no accessIntent: it was malformed and dropped, "bad\x1bsurface"` + tail},
	} {
		if v := p.Resolve(c.req, nil); v.Action != Ask || v.Explanation != c.want {
			t.Errorf("%+v: %s %q\nwant %q", c.req, v.Action, v.Explanation, c.want)
		}
	}
}
