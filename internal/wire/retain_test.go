package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
)

// A parsed request keeps its own strings, not the file's text: a short id
// and agent name from a 1 MiB file must not hold the megabyte (the console
// keeps such strings long after the ask, decision 0120).
func TestParsedRequestKeepsNotTheText(t *testing.T) {
	const n = 20
	kept := make([]*Request, 0, n)
	grew := retainedBy(func() {
		for i := range n {
			data := []byte(fmt.Sprintf(`{"id":"r%d","createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a","pad":"%s"}`,
				i, strings.Repeat("x", MaxFileSize-200)))
			r, err := ParseRequest(data)
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, r)
		}
	})
	if grew > n*MaxFileSize/4 {
		t.Errorf("%d parsed requests keep %d bytes live; their strings are a few bytes each", n, grew)
	}
	if len(kept) != n || kept[n-1].ID != fmt.Sprintf("r%d", n-1) {
		t.Fatal("requests lost")
	}
}

func retainedBy(f func()) int {
	before := testkit.LiveHeap()
	f()
	after := testkit.LiveHeap()
	return int(max(after, before) - before)
}
