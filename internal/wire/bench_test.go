package wire

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

func BenchmarkParseRequest(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(testkit.Dir(b), "requests", "newest-bash-floor-units.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseRequest(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalResponse(b *testing.B) {
	r := Response{Approved: true, State: StateApproved, ResponderSessionID: servedID, RespondedAt: 1791279020001,
		DecidedBy: RuleDecision("bash", strp("npm *"), strp("permtui"))}
	for b.Loop() {
		if _, err := MarshalResponse(r); err != nil {
			b.Fatal(err)
		}
	}
}
