package resolve

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/wire"
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
	ints  int    // integer-like keys stored
	strs  int    // other keys stored
	top   uint64 // the largest integer-like key stored
	// unsorted: an integer-like key arrived after a key it must precede.
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
	if n, isIndex := arrayIndex(k); isIndex {
		if o.strs > 0 || (o.ints > 0 && n < o.top) {
			o.unsorted = true
		}
		o.ints++
		o.top = max(o.top, n)
	} else {
		o.strs++
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
		if n, ok := arrayIndex(k); ok {
			nums = append(nums, intKey{n, i})
		}
	}
	slices.SortFunc(nums, func(a, b intKey) int { return cmp.Compare(a.n, b.n) })
	ks, vs := make([]string, 0, len(o.ks)), make([]V, 0, len(o.vs))
	for _, n := range nums {
		ks, vs = append(ks, o.ks[n.at]), append(vs, o.vs[n.at])
	}
	for i, k := range o.ks {
		if _, ok := arrayIndex(k); !ok {
			ks, vs = append(ks, k), append(vs, o.vs[i])
		}
	}
	o.ks, o.vs, o.unsorted = ks, vs, false
	for i, k := range ks {
		o.index[k] = i
	}
}

// arrayIndex reports whether k is a canonical array index ("0", or digits
// without a leading zero, at most 2^32-2), which JavaScript orders first.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return n, err == nil && n <= 1<<32-2
}

// jsonValue is a decoded JSON value; objects keep JavaScript key order.
type jsonValue struct {
	kind    jsonKind
	str     string // string contents, or a number's text
	boolean bool
	obj     *ordered[jsonValue]
	arr     []jsonValue
}

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

func (k jsonKind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// parseJSON is a strict JSON.parse: no trailing commas, no comments, no
// leading BOM. Invalid UTF-8 reads as Node's utf8 decoding reads it.
func parseJSON(text string) (jsonValue, error) {
	p := jsonParser{s: decodeUTF8(text)}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return jsonValue{}, err
	}
	p.space()
	if p.i < len(p.s) {
		return jsonValue{}, p.errorf("unexpected %q after the JSON value", p.s[p.i])
	}
	return v, nil
}

type jsonParser struct {
	s string
	i int
}

const maxJSONDepth = 200

func (p *jsonParser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.s[:p.i], "\n")
	return fmt.Errorf("JSON syntax error at line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (jsonValue, error) {
	if depth > maxJSONDepth {
		return jsonValue{}, p.errorf("nesting deeper than %d", maxJSONDepth)
	}
	if p.i >= len(p.s) {
		return jsonValue{}, p.errorf("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		return jsonValue{kind: jsonString, str: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return jsonValue{kind: jsonBool, boolean: true}, nil
	case strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return jsonValue{kind: jsonBool}, nil
	case strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return jsonValue{kind: jsonNull}, nil
	default:
		return jsonValue{}, p.errorf("unexpected %q", c)
	}
}

func (p *jsonParser) object(depth int) (jsonValue, error) {
	p.i++ // {
	obj := newOrdered[jsonValue]()
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return jsonValue{kind: jsonObject, obj: obj}, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return jsonValue{}, p.errorf("expected a property name in double quotes")
		}
		key, err := p.str()
		if err != nil {
			return jsonValue{}, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return jsonValue{}, p.errorf("expected ':' after property name")
		}
		p.i++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return jsonValue{}, err
		}
		obj.set(key, v)
		p.space()
		if p.i >= len(p.s) {
			return jsonValue{}, p.errorf("unexpected end of input in an object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return jsonValue{kind: jsonObject, obj: obj}, nil
		default:
			return jsonValue{}, p.errorf("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int) (jsonValue, error) {
	p.i++ // [
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return jsonValue{kind: jsonArray}, nil
	}
	var items []jsonValue
	for {
		p.space()
		item, err := p.value(depth + 1)
		if err != nil {
			return jsonValue{}, err
		}
		items = append(items, item)
		p.space()
		if p.i >= len(p.s) {
			return jsonValue{}, p.errorf("unexpected end of input in an array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return jsonValue{kind: jsonArray, arr: items}, nil
		default:
			return jsonValue{}, p.errorf("expected ',' or ']' in an array")
		}
	}
}

func (p *jsonParser) number() (jsonValue, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return jsonValue{}, p.errorf("invalid number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return jsonValue{}, p.errorf("invalid number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return jsonValue{}, p.errorf("invalid number")
		}
	}
	return jsonValue{kind: jsonNumber, str: p.s[start:p.i]}, nil
}

// str decodes a JSON string. A lone surrogate escape is kept in its WTF-8
// form (wire.AppendSurrogate).
func (p *jsonParser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			s := p.s[start:p.i]
			p.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	var b strings.Builder
	b.WriteString(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf("control character in a string")
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.s) {
			break
		}
		esc := p.s[p.i]
		p.i++
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) && strings.HasPrefix(p.s[p.i:], "\\u") {
				save := p.i
				p.i += 2
				if lo, ok := p.hex4(); ok {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						r = pair
					} else {
						p.i = save
					}
				} else {
					p.i = save
				}
			}
			if utf16.IsSurrogate(r) {
				// JSON.parse keeps a lone surrogate (decision 0175).
				var scratch [3]byte
				b.Write(wire.AppendSurrogate(scratch[:0], uint16(r)))
				continue
			}
			b.WriteRune(r)
		default:
			return "", p.errorf("invalid escape \\%c", esc)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil || strings.ContainsAny(p.s[p.i:p.i+4], "+-") {
		return 0, false
	}
	p.i += 4
	return rune(n), true
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
