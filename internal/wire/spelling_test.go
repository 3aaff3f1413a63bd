package wire

import (
	"strings"
	"testing"
)

// 40.0.0's payload.request.matchedSpelling: a string or null, a missing key
// reading as null; kept through a round trip; a mistyped one drops the
// payload as any malformed payload field does.
func TestMatchedSpelling(t *testing.T) {
	payload := func(spelling string) string {
		return `{"id":"x","createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a",` +
			`"payload":{"kind":"bash","request":{"requester":{"agentName":"a","forwarded":true,"sessionId":"c"},` +
			`"surface":"bash","toolName":"bash","invokedToolName":null,"value":"rm ./x","matchedPattern":"rm /w/*"` +
			spelling + `,"commandContext":null,"executedUnit":null},"evidence":[],"annotations":[]}}`
	}
	for name, tc := range map[string]struct {
		field string
		want  string // "<nil>" for null or absent; "" for a dropped payload
	}{
		"string":  {`,"matchedSpelling":"rm /w/x"`, "rm /w/x"},
		"null":    {`,"matchedSpelling":null`, "<nil>"},
		"absent":  {``, "<nil>"},
		"number":  {`,"matchedSpelling":7`, ""},
		"escaped": {`,"matchedSpelling":"rm \u001b[2J"`, "rm \x1b[2J"},
	} {
		r, err := ParseRequest([]byte(payload(tc.field)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tc.want == "" {
			if r.Payload != nil || len(r.Dropped) != 1 || !strings.Contains(r.Dropped[0].Reason, "matchedSpelling") {
				t.Errorf("%s: payload %+v, dropped %+v; want the payload dropped", name, r.Payload, r.Dropped)
			}
			continue
		}
		if r.Payload == nil {
			t.Fatalf("%s: payload dropped: %+v", name, r.Dropped)
		}
		got := "<nil>"
		if s := r.Payload.Request.MatchedSpelling; s != nil {
			got = *s
		}
		if got != tc.want {
			t.Errorf("%s: matchedSpelling = %q, want %q", name, got, tc.want)
		}
		assertRoundTrip(t, r)
	}
}
