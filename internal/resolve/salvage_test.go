package resolve

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A config file rejected for its syntax names the denies written in it, as
// far as its text can be read, so the console can say which are out of
// force (issue 19, decision 0158).
func TestARejectedConfigNamesItsDenies(t *testing.T) {
	f := newFixture(t)
	// One comma missing after "deny": the file is rejected whole.
	file := f.global(`{
  // the team's rules
  "permission": {
    "bash": {"*": "ask", "rm -rf *": "deny" "git push --force*": {"action": "deny", "reason": "no force pushes"}},
    "read": "deny",
    "write": {"/etc/*": "allow"}
  }
}`)
	probs := Load(f.opts).Problems()
	if len(probs) != 1 || probs[0].File != file {
		t.Fatalf("problems = %+v", probs)
	}
	msg := probs[0].Message
	want := OutOfForceDenies + `bash "rm -rf *", bash "git push --force*", read "*"`
	if !strings.HasSuffix(msg, want) {
		t.Fatalf("message %q does not end with %q", msg, want)
	}
}

func TestSalvageDenies(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{`{"permission":{"bash":{"rm *":"deny",}}}`, []string{`bash "rm *"`}},
		{`{"permission":{"bash":"deny"}, "yoloMode": true,}`, []string{`bash "*"`}},
		{`{"other":{"bash":{"rm *":"deny"}}}`, nil},                                 // not under permission
		{`{"permission":{"bash":{"rm *":"allow"}}}`, nil},                           // no deny
		{`{"permission":{"bash":{"a \"q\" *":"deny"`, []string{`bash "a \"q\" *"`}}, // cut short
		{`{"permission":{"bash":{"rm *" "deny"}}}`, nil},                            // no colon: no key, nothing guessed
		{`{"permission":{"bash":["deny"]}}`, nil},
	} {
		if got := salvageDenies(c.text); !slices.Equal(got, c.want) {
			t.Errorf("salvageDenies(%s) = %q, want %q", c.text, got, c.want)
		}
	}
}

// Any text, however broken, is read without a panic, and a named deny
// always has a surface and a quoted pattern.
func FuzzSalvageDenies(f *testing.F) {
	f.Add(`{"permission":{"bash":{"rm *":"deny" "x":{"action":"deny"}}}}`)
	f.Add(`{"permission":{"read":'deny',`)
	f.Add(`"`)
	f.Fuzz(func(t *testing.T, text string) {
		for _, d := range salvageDenies(text) {
			surface, pattern, _ := strings.Cut(d, " ")
			if q, err := strconv.QuotedPrefix(d); err == nil {
				surface, pattern = q, strings.TrimPrefix(d[len(q):], " ")
			}
			if _, err := strconv.Unquote(pattern); (surface == "" || err != nil) && !strings.HasPrefix(d, "and ") {
				t.Fatalf("deny %q names no surface and quoted pattern", d)
			}
		}
	})
}
