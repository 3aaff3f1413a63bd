package resolve

import (
	"cmp"
	"slices"
)

// ruleGroup indexes the rules of one plain surface name by the literal text
// their value pattern must start with (a byte trie over prefixes) or, when
// it has no literal prefix, must end with (a trie over reversed suffixes).
// A value then only meets the rules whose literal parts it carries.
type ruleGroup struct {
	prefixes trie
	suffixes trie
	rest     []int32 // rules with neither a literal prefix nor suffix
	// restNeed[i] holds 1 + hashed byte pairs of a literal segment that rule
	// rest[i] needs somewhere in the value (0 = no need): a value missing one
	// of them cannot match, so the rule is skipped without running the glob.
	restNeed [][pairsPerRule]uint16
}

// pairBits is a Bloom-style set of the byte pairs present in a value.
type pairBits [pairSetSize / 64]uint64

const (
	pairSetSize  = 4096
	pairsPerRule = 4
)

func pairHash(a, b byte) uint16 { return (uint16(a)<<5 ^ uint16(b)) % pairSetSize }

func (s *pairBits) fill(v string) {
	for i := 0; i+1 < len(v); i++ {
		h := pairHash(v[i], v[i+1])
		s[h/64] |= 1 << (h % 64)
	}
}

func (s *pairBits) has(h uint16) bool { return s[h/64]&(1<<(h%64)) != 0 }

// restNeed samples byte pairs, spread over the longest literal segment a
// "*…*" pattern needs.
func restNeed(p *Pattern) (need [pairsPerRule]uint16) {
	if p.hasAlt || len(p.full.segments) == 0 {
		return need
	}
	longest := slices.MaxFunc(p.full.segments, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	if len(longest) < 2 {
		return need
	}
	last := len(longest) - 2
	for i := range need {
		at := last * i / (pairsPerRule - 1)
		need[i] = 1 + pairHash(longest[at], longest[at+1])
	}
	return need
}

func (s *pairBits) hasAll(need *[pairsPerRule]uint16) bool {
	for _, h := range need {
		if h != 0 && !s.has(h-1) {
			return false
		}
	}
	return true
}

// trie is a byte trie in flat arrays (no allocation per node): children are
// a first-child/next-sibling chain, and each node's rules a linked list,
// highest id first. Index 0 is the root node and the "none" link.
type trie struct {
	nodes []trieNode
	links []ruleLink
}

type trieNode struct {
	child, sibling int32 // 0 = none (the root is nobody's child)
	rules          int32 // head of the node's rule list in links; 0 = none
	label          byte
}

type ruleLink struct{ id, next int32 }

// insert adds a rule under key; ids must arrive in ascending order.
func (t *trie) insert(key string, id int32) {
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, trieNode{})
		t.links = append(t.links, ruleLink{})
	}
	n := int32(0)
	for i := 0; i < len(key); i++ {
		c := t.child(n, key[i])
		if c == 0 {
			c = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{label: key[i], sibling: t.nodes[n].child})
			t.nodes[n].child = c
		}
		n = c
	}
	t.links = append(t.links, ruleLink{id: id, next: t.nodes[n].rules})
	t.nodes[n].rules = int32(len(t.links) - 1)
}

func (t *trie) child(n int32, b byte) int32 {
	c := t.nodes[n].child
	for c != 0 && t.nodes[c].label != b {
		c = t.nodes[c].sibling
	}
	return c
}

// lastInList scans a node's rules (highest first) down to best.
func (t *trie) lastInList(rules []rule, link int32, v string, best int32) int32 {
	for ; link != 0 && t.links[link].id > best; link = t.links[link].next {
		if id := t.links[link].id; rules[id].value.Match(v) {
			return id
		}
	}
	return best
}

// indexKey returns the literal text a value must start with (prefix) or end
// with (suffix) to match p; a pattern with an optional " *" tail is keyed by
// the shorter form's prefix, which also prefixes the full form.
func indexKey(p *Pattern) (prefix, suffix string) {
	g := &p.full
	if p.hasAlt {
		g = &p.alt
	}
	if g.literal {
		return g.expr, ""
	}
	if g.prefix != "" {
		return g.prefix, ""
	}
	if p.hasAlt {
		return "", "" // the full form ends in '*': no literal suffix
	}
	return "", g.suffix
}

func buildGroup(rules []rule, ids []int32) *ruleGroup {
	g := &ruleGroup{}
	for _, id := range ids {
		prefix, suffix := indexKey(&rules[id].value)
		switch {
		case prefix != "":
			g.prefixes.insert(prefix, id)
		case suffix != "":
			g.suffixes.insert(reverse(suffix), id)
		default:
			g.rest = append(g.rest, id)
			g.restNeed = append(g.restNeed, restNeed(&rules[id].value))
		}
	}
	return g
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

// lastMatch returns the highest rule id above best whose value pattern
// matches v, or best. It does not allocate.
func (g *ruleGroup) lastMatch(rules []rule, v string, best int32) int32 {
	if len(g.rest) > 0 && g.rest[len(g.rest)-1] > best {
		var pairs pairBits
		filled := false
		for k := len(g.rest) - 1; k >= 0 && g.rest[k] > best; k-- {
			if need := &g.restNeed[k]; need[0] != 0 {
				if !filled {
					pairs.fill(v)
					filled = true
				}
				if !pairs.hasAll(need) {
					continue
				}
			}
			if rules[g.rest[k]].value.Match(v) {
				best = g.rest[k]
				break
			}
		}
	}
	if t := &g.prefixes; len(t.nodes) > 0 {
		n := int32(0)
		for i := 0; i < len(v); i++ {
			if n = t.child(n, v[i]); n == 0 {
				break
			}
			best = t.lastInList(rules, t.nodes[n].rules, v, best)
		}
	}
	if t := &g.suffixes; len(t.nodes) > 0 {
		n := int32(0)
		for i := len(v) - 1; i >= 0; i-- {
			if n = t.child(n, v[i]); n == 0 {
				break
			}
			best = t.lastInList(rules, t.nodes[n].rules, v, best)
		}
	}
	return best
}
