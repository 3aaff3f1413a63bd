package resolve

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/permtui/permtui/internal/jsonparse"
)

// stripJSONComments removes // line comments (keeping the newline) and
// /* block */ comments (to the end of the text when unclosed), copying
// single- and double-quoted strings verbatim with their backslash escapes,
// exactly as pi's loader does before JSON.parse (ruleset-semantics §2.2).
func stripJSONComments(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '"' || c == '\'':
			j := quotedEnd(text, i)
			b.WriteString(text[i:j])
			i = j
		case c == '/' && i+1 < len(text) && text[i+1] == '/':
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				return b.String()
			}
			i += j // the newline itself is kept
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				return b.String()
			}
			i += 2 + j + 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// ordered is a JavaScript-style object: integer-like keys first in ascending
// order, then the other keys in first-insertion order; setting an existing
// key replaces its value in place (ruleset-semantics §2.3). Keys are stored
// in insertion order and put in JavaScript order once, when first read, so
// building a map of n keys costs O(n log n) whatever their order.
type ordered[V any] struct {
	ks    []string
	vs    []V
	index map[string]int
	ints  int // integer-like keys stored
	// unsorted: an integer-like key arrived since the keys were last ordered.
	unsorted bool
}

func newOrdered[V any]() *ordered[V] { return &ordered[V]{index: map[string]int{}} }

func (o *ordered[V]) Len() int { return len(o.ks) }

// all returns the keys and values in JavaScript order; callers must not
// modify them.
func (o *ordered[V]) all() ([]string, []V) {
	if o.unsorted {
		o.sort()
	}
	return o.ks, o.vs
}

func (o *ordered[V]) get(k string) (V, bool) {
	i, ok := o.index[k]
	if !ok {
		var zero V
		return zero, false
	}
	return o.vs[i], true
}

func (o *ordered[V]) set(k string, v V) {
	if i, ok := o.index[k]; ok {
		o.vs[i] = v
		return
	}
	if _, isIndex := ArrayIndex(k); isIndex {
		o.ints++
		o.unsorted = true
	}
	o.index[k] = len(o.ks)
	o.ks = append(o.ks, k)
	o.vs = append(o.vs, v)
}

// sort moves the integer-like keys to the front in ascending numeric order,
// keeping the other keys in insertion order.
func (o *ordered[V]) sort() {
	type intKey struct {
		n  uint64
		at int
	}
	nums := make([]intKey, 0, o.ints)
	for i, k := range o.ks {
		if n, ok := ArrayIndex(k); ok {
			nums = append(nums, intKey{n, i})
		}
	}
	slices.SortFunc(nums, func(a, b intKey) int { return cmp.Compare(a.n, b.n) })
	ks, vs := make([]string, 0, len(o.ks)), make([]V, 0, len(o.vs))
	for _, n := range nums {
		ks, vs = append(ks, o.ks[n.at]), append(vs, o.vs[n.at])
	}
	for i, k := range o.ks {
		if _, ok := ArrayIndex(k); !ok {
			ks, vs = append(ks, k), append(vs, o.vs[i])
		}
	}
	o.ks, o.vs, o.unsorted = ks, vs, false
	for i, k := range ks {
		o.index[k] = i
	}
}

// ArrayIndex reports whether k is a canonical array index ("0", or digits
// without a leading zero, at most 2^32-2), which JavaScript orders first.
func ArrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') ||
		strings.ContainsFunc(k, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, false // and ParseUint, whose error allocates, is not called
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return n, err == nil && n <= 1<<32-2
}

// maxJSONDepth bounds a policy file's nesting; pi's files nest three deep.
const maxJSONDepth = 200

// parseJSON is JSON.parse over text read as Node reads a file (decodeUTF8),
// through the one JSON reader; a syntax error names its line.
func parseJSON(text string) (jsonparse.Value, error) {
	text = decodeUTF8(text)
	v, err := jsonparse.Parse(text, maxJSONDepth)
	var se *jsonparse.SyntaxError
	if errors.As(err, &se) {
		line := 1 + strings.Count(text[:se.Offset], "\n")
		return v, fmt.Errorf("JSON syntax error at line %d: %s", line, se.Msg)
	}
	return v, err
}

// quotedEnd is the index just past the string literal opening at text[i]
// (quoted with text[i], backslash escapes skipped), or len(text) when it is
// not closed.
func quotedEnd(text string, i int) int {
	quote, j := text[i], i+1
	for j < len(text) && text[j] != quote {
		if text[j] == '\\' {
			j++
		}
		j++
	}
	return min(j+1, len(text))
}
