package wire

import (
	"os"
	"path/filepath"
	"strings"
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

// BenchmarkParseRequestDense reads requests at the size cap packed with the
// smallest values a hostile child could write, where a reader's memory per
// input byte is highest (docs/performance.md).
func BenchmarkParseRequestDense(b *testing.B) {
	const head = `{"id":"a","createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a","x":`
	for _, c := range []struct{ name, open, fill, close string }{
		{"numbers", "[", "0,", "0]}"}, {"strings", "[", `"",`, "0]}"}, {"objects", "[", "{},", "0]}"}, {"keys", "{", `"k":0,`, `"z":0}}`},
	} {
		n := (MaxFileSize - len(head) - 8) / len(c.fill)
		data := []byte(head + c.open + strings.Repeat(c.fill, n) + c.close)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseRequest(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
