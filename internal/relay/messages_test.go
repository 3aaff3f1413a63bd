package relay

import (
	"testing"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// An ask a relay judged without the project at its cwd reaches the hub's
// consoles saying so: the verdict it carries keeps the project judged with
// (decision 0234).
func TestAnAskCarriesTheProjectItWasJudgedWith(t *testing.T) {
	raw, err := wire.MarshalRequest(bash("alpha", 1, "git push"))
	if err != nil {
		t.Fatal(err)
	}
	v := shownVerdict(resolve.Verdict{Action: resolve.Ask, OutsideProject: "/w/a"})
	data, err := json.Marshal(askMsg{Host: "alpha", Session: rootID, Path: "/inbox/x.json", Request: raw, Verdict: v})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := decodeAsk(data)
	if err != nil || m.Verdict.OutsideProject != "/w/a" {
		t.Fatalf("decoded %+v, %v", m.Verdict, err)
	}
}

// The cut form of an ask too large for the hub drops its scopes too: they
// repeat the suggestion, so a cut ask that kept them (one denied by a
// smaller max_payload met after a reconnect) could be as large as the ask.
func TestACutAskCarriesNoScopes(t *testing.T) {
	req := bigBash(t, "alpha", 1, 64<<10)
	raw, err := wire.MarshalRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	scopes := serve.OfferedScopes(req, nil)
	cut, err := cutAsk(askMsg{Host: "alpha", Session: rootID, Request: raw, Scopes: &scopes}, req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(cut)
	if err != nil || cut.Scopes != nil || len(data) > 2*maxVerdictText {
		t.Fatalf("cut ask of %d bytes, scopes %v, %v", len(data), cut.Scopes != nil, err)
	}
}
