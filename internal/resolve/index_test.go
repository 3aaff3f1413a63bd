package resolve

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

// naiveLast is last-match-wins by a plain scan of every rule.
func naiveLast(rs *ruleset, surface string, values []string) int32 {
	for i := len(rs.rules) - 1; i >= 0; i-- {
		r := &rs.rules[i]
		if !r.surface.Match(surface) {
			continue
		}
		for _, v := range values {
			if r.value.Match(v) {
				return int32(i)
			}
		}
	}
	return -1
}

// The prefix/suffix index finds exactly the rule a full scan finds.
func TestIndexAgreesWithFullScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	// With lone surrogates (WTF-8 \ud83d, \ude00), whose patterns skip the index.
	alphabet := []string{"a", "b", "/", " ", "*", "?", "é", "😀", "~", "ab", "*.e", "\xed\xa0\xbd", "\xed\xb8\x80"}
	word := func(max int) string {
		var b strings.Builder
		for range rng.IntN(max + 1) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for round := range 300 {
		perms := newOrdered[surfaceValue]()
		for _, surface := range []string{"bash", "b?sh", "read", "*"} {
			m := newOrdered[entry]()
			for range rng.IntN(30) {
				m.set(word(6), entry{action: [...]Action{Allow, Ask, Deny}[rng.IntN(3)], origin: OriginGlobal})
			}
			if m.Len() > 0 {
				perms.set(surface, surfaceValue{patterns: m})
			}
		}
		rs := compose(perms, nil, "/home/u")
		p := &Policy{}
		for range 50 {
			surface := [...]string{"bash", "read", "x"}[rng.IntN(3)]
			values := make([]string, 1+rng.IntN(3))
			for i := range values {
				values[i] = strings.ReplaceAll(word(8), "*", "")
				if rng.IntN(4) == 0 {
					values[i] = word(8)
				}
				values[i] = wire.ToValidWTF8(values[i]) // a split pair joined, as wire makes it
			}
			got := p.judge(rs, surface, values, nil)
			want := naiveLast(rs, surface, values)
			if got.rule != &rs.rules[want] {
				t.Fatalf("round %d: %s %q: index chose %+v, full scan rule %d %+v", round, surface, values, got.rule.ref, want, rs.rules[want].ref)
			}
		}
	}
}
