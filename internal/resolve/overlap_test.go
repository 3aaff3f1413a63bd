package resolve

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

// Overlaps agrees with the matcher: two short patterns over a small
// alphabet overlap exactly when some value of up to eight characters
// matches both (a shared value needs no more than their literals and '?').
func TestOverlapsAgreesWithTheMatcher(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	alphabet := []byte("ab *?")
	var values []string
	var grow func(string)
	grow = func(v string) {
		values = append(values, v)
		if len(v) < 8 {
			for _, c := range "ab " {
				grow(v + string(c))
			}
		}
	}
	grow("")
	random := func() string {
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 400 {
		a, b := random(), random()
		pa, pb := CompilePattern(a, ""), CompilePattern(b, "")
		want := slices.ContainsFunc(values, func(v string) bool { return pa.Match(v) && pb.Match(v) })
		got, exact := pa.Overlaps(&pb)
		if got != want || !exact {
			t.Errorf("%q and %q: overlap %v (exact %v), want %v", a, b, got, exact, want)
		}
	}
}

// Patterns too long to walk are said to overlap, not exactly: the caller
// says "may".
func TestLongPatternsMayOverlap(t *testing.T) {
	long := strings.Repeat("x?", 150)
	a, b := CompilePattern("*"+long+"a*", ""), CompilePattern("*b"+long+"*", "")
	if got, exact := a.Overlaps(&b); !got || exact {
		t.Errorf("overlap %v exact %v, want a conservative overlap", got, exact)
	}
}

// A grant passes the deny rules, of any agent's view, that share a value
// with it on a surface it covers (F1: "* *" and "bash *" pass rm -rf *).
func TestDeniesPassedByAGrant(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"*":"ask","bash":{"*":"ask","git status":"allow","rm -rf *":"deny"},"path_write":{"/etc/*":"deny"}}}`)
	f.agent("builder", "---\npermission:\n  bash:\n    \"npm publish *\": deny\n---\n")
	p := Load(f.opts)
	cases := []struct {
		grant wire.Grant
		want  []string // pattern of each deny passed, in policy order
		sure  bool
	}{
		{wire.Grant{Surface: "bash", Pattern: "npm test"}, nil, true},
		{wire.Grant{Surface: "bash", Pattern: "npm *"}, []string{"npm publish *"}, true},
		{wire.Grant{Surface: "bash", Pattern: "*"}, []string{"rm -rf *", "npm publish *"}, true},
		{wire.Grant{Surface: "*", Pattern: "*"}, []string{"rm -rf *", "/etc/*", "npm publish *"}, true},
		{wire.Grant{Surface: "path_write", Pattern: "/etc/pass*"}, []string{"/etc/*"}, true},
		{wire.Grant{Surface: "path", Pattern: "/etc/passwd"}, []string{"/etc/*"}, true},
		{wire.Grant{Surface: "path_read", Pattern: "/etc/passwd"}, nil, true},
		{wire.Grant{Surface: "bash", Pattern: "rm -r*"}, []string{"rm -rf *"}, true},
		{wire.Grant{Surface: "bash", Pattern: "rm -f *"}, nil, true},
	}
	for _, c := range cases {
		var got []string
		for _, d := range p.DeniesPassed(c.grant) {
			got = append(got, d.Rule.Pattern)
			if d.Sure != c.sure {
				t.Errorf("%v passes %q sure=%v", c.grant, d.Rule.Pattern, d.Sure)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v passes %q, want %q", c.grant, got, c.want)
		}
	}
}
