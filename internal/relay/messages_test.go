package relay

import (
	"testing"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/resolve"
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
