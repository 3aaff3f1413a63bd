// Package jsonparse reads one JSON text as JavaScript's JSON.parse does: the
// strict grammar of RFC 8259, nothing after the value, the last of duplicate
// keys, a lone surrogate escape kept (as WTF-8, decision 0175). It also
// gives every value's byte span, so an editor can insert text beside it.
// It is the one JSON reader of the protocol and the policy files.
package jsonparse

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is a value's JSON type; Absent is a key that is not there.
type Kind uint8

// The kinds, Absent first so that a zero Value is a missing one.
const (
	Absent Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	return [...]string{"absent", "null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// Value is one decoded JSON value.
type Value struct {
	Kind Kind
	Bool bool
	// Str is a string's contents or a number's literal text (numbers beyond
	// float64 stay readable: the caller decides what they mean).
	Str string
	// Start and End are the value's bytes in the text, [Start, End).
	Start, End int
	// c holds a container's elements behind a pointer, so a scalar (most
	// values of a large text) is small.
	c *container
}

type container struct {
	items   []Value
	members []Member
}

// Items are an array's values.
func (v Value) Items() []Value {
	if v.c == nil {
		return nil
	}
	return v.c.items
}

// Members are an object's members in first-seen key order, each key once
// with its last value.
func (v Value) Members() []Member {
	if v.c == nil {
		return nil
	}
	return v.c.members
}

// Member is one key of an object with its value.
type Member struct {
	Key      string
	KeyStart int // the key's opening quote
	Value    Value
}

// Get is the value of key in an object; Absent when v is no object or lacks
// the key.
func (v Value) Get(key string) Value {
	members := v.Members()
	for i := range members {
		if members[i].Key == key {
			return members[i].Value
		}
	}
	return Value{}
}

// SyntaxError says where a text stops being JSON.
type SyntaxError struct {
	Offset int // byte offset in the text
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("JSON syntax error at byte %d: %s", e.Offset, e.Msg)
}

// Parse reads text as one JSON value with at most maxDepth objects and
// arrays nested. A byte of invalid UTF-8 in a string reads as U+FFFD (as
// encoding/json does; a caller wanting Node's decoding decodes the text
// first). A leading BOM is refused, as JSON.parse refuses U+FEFF.
func Parse(text string, maxDepth int) (Value, error) {
	p := parser{s: text, maxDepth: maxDepth}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.space()
	if p.i < len(p.s) {
		return Value{}, p.fail("unexpected %s after the JSON value", p.here())
	}
	return v, nil
}

type parser struct {
	s        string
	i        int
	maxDepth int
	// Open containers gather their elements here; each is copied out once,
	// at its exact size, when it closes.
	members stack[Member]
	items   stack[Value]
}

// chunkLen is how many elements a chunk of a stack holds.
const chunkLen = 1024

// stack keeps its elements in chunks that never move, so a container of
// many elements costs no copying while it grows, only the one copy out.
type stack[T any] struct {
	chunks [][]T
	n      int
}

func (s *stack[T]) push(v T) {
	c := s.n / chunkLen
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, nil)
		if c > 0 { // the first chunk grows as needed: most texts are small
			s.chunks[c] = make([]T, 0, chunkLen)
		}
	}
	s.chunks[c] = append(s.chunks[c], v)
	s.n++
}

func (s *stack[T]) at(i int) *T { return &s.chunks[i/chunkLen][i%chunkLen] }

// take returns the elements from base on, at their exact size.
func (s *stack[T]) take(base int) []T {
	out := make([]T, 0, s.n-base)
	for i := base; i < s.n; {
		chunk := s.chunks[i/chunkLen][i%chunkLen:]
		out = append(out, chunk...)
		i += len(chunk)
	}
	return out
}

// truncate drops the elements from n on.
func (s *stack[T]) truncate(n int) {
	for c := n / chunkLen; c*chunkLen < s.n; c++ {
		s.chunks[c] = s.chunks[c][:max(n-c*chunkLen, 0)]
	}
	s.n = n
}

// here names the character at the current offset as a person reads it: a
// UTF-8 character (a BOM by name), or a byte that is not one.
func (p *parser) here() string {
	r, size := utf8.DecodeRuneInString(p.s[p.i:])
	switch {
	case r == utf8.RuneError && size <= 1:
		return fmt.Sprintf("byte 0x%02X", p.s[p.i])
	case r == '\uFEFF':
		return "byte-order mark (U+FEFF)"
	}
	return strconv.QuoteRune(r)
}

func (p *parser) fail(format string, args ...any) error {
	return &SyntaxError{Offset: p.i, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if p.i >= len(p.s) {
		return Value{}, p.fail("unexpected end of input")
	}
	if c := p.s[p.i]; (c == '{' || c == '[') && depth >= p.maxDepth {
		return Value{}, p.fail("nesting deeper than %d", p.maxDepth)
	}
	start := p.i
	v := Value{Start: start}
	var err error
	switch c := p.s[p.i]; {
	case c == '{':
		v.Kind = Object
		var members []Member
		if members, err = p.object(depth); len(members) > 0 {
			v.c = &container{members: members}
		}
	case c == '[':
		v.Kind = Array
		var items []Value
		if items, err = p.array(depth); len(items) > 0 {
			v.c = &container{items: items}
		}
	case c == '"':
		v.Kind = String
		v.Str, err = p.str()
	case c == '-' || c >= '0' && c <= '9':
		v.Kind = Number
		err = p.number()
		v.Str = p.s[start:p.i]
	case p.literal("true"):
		v.Kind, v.Bool = Bool, true
	case p.literal("false"):
		v.Kind = Bool
	case p.literal("null"):
		v.Kind = Null
	default:
		return Value{}, p.fail("unexpected %s", p.here())
	}
	if err != nil {
		return Value{}, err
	}
	v.End = p.i
	return v, nil
}

func (p *parser) literal(word string) bool {
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		p.i += len(word)
		return true
	}
	return false
}

// indexFrom is the member count beyond which an object finds a duplicate key
// through a map rather than a scan, so a hostile object of many keys stays
// linear.
const indexFrom = 16

func (p *parser) object(depth int) ([]Member, error) {
	p.i++ // {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return nil, nil
	}
	base := p.members.n
	defer p.members.truncate(base)
	var index map[string]int
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.fail("expected a property name in double quotes")
		}
		m := Member{KeyStart: p.i}
		var err error
		if m.Key, err = p.str(); err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.fail("expected ':' after a property name")
		}
		p.i++
		p.space()
		if m.Value, err = p.value(depth + 1); err != nil {
			return nil, err
		}
		index = addMember(&p.members, base, index, m)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return p.members.take(base), nil
		default:
			return nil, p.fail("expected ',' or '}' in an object")
		}
	}
}

// addMember adds m to the object whose members start at base, or gives an
// earlier member of its key m's value and spans in place, as JSON.parse
// keeps a repeated key where it first stood.
func addMember(members *stack[Member], base int, index map[string]int, m Member) map[string]int {
	at, found := index[m.Key]
	for i := base; index == nil && i < members.n; i++ {
		if members.at(i).Key == m.Key {
			at, found = i, true
			break
		}
	}
	if found {
		*members.at(at) = m
		return index
	}
	members.push(m)
	switch {
	case index != nil:
		index[m.Key] = members.n - 1
	case members.n-base > indexFrom:
		index = make(map[string]int, 2*(members.n-base))
		for i := base; i < members.n; i++ {
			index[members.at(i).Key] = i
		}
	}
	return index
}

func (p *parser) array(depth int) ([]Value, error) {
	p.i++ // [
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return nil, nil
	}
	base := p.items.n
	defer p.items.truncate(base)
	for {
		p.space()
		item, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.items.push(item)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.fail("unexpected end of input in an array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return p.items.take(base), nil
		default:
			return nil, p.fail("expected ',' or ']' in an array")
		}
	}
}

func (p *parser) digits() bool {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

func (p *parser) number() error {
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if !p.digits() {
		return p.fail("invalid number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if !p.digits() {
			return p.fail("invalid number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return p.fail("invalid number")
		}
	}
	return nil
}

// str reads a string at its opening quote. One without escapes and with
// valid UTF-8 is a slice of the text; any other is built.
func (p *parser) str() (string, error) {
	p.i++ // "
	start := p.i
	ascii := true
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			if ascii || utf8.ValidString(p.s[start:p.i]) {
				p.i++
				return p.s[start : p.i-1], nil
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
		ascii = ascii && c < utf8.RuneSelf
		p.i++
	}
	return p.slowStr(start)
}

// slowStr builds the string that opened at start, from p.i on.
func (p *parser) slowStr(start int) (string, error) {
	b := make([]byte, 0, p.i-start+16)
	for p.i = start; p.i < len(p.s); {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c == '\\':
			var err error
			if b, err = p.escape(b); err != nil {
				return "", err
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			b = utf8.AppendRune(b, r) // U+FFFD for an invalid byte
			p.i += size
		}
	}
	return "", p.fail("unterminated string")
}

// escape appends what the escape at p.i stands for.
func (p *parser) escape(b []byte) ([]byte, error) {
	p.i++ // backslash
	if p.i >= len(p.s) {
		return nil, p.fail("unterminated string")
	}
	esc := p.s[p.i]
	p.i++
	// The one-letter escapes: the k-th letter stands for the k-th character.
	if k := strings.IndexByte(`"\/bfnrt`, esc); k >= 0 {
		return append(b, "\"\\/\b\f\n\r\t"[k]), nil
	}
	if esc != 'u' {
		return nil, p.fail("invalid escape \\%c", esc)
	}
	r, ok := hex4(p.s[p.i:])
	if !ok {
		return nil, p.fail("invalid \\u escape")
	}
	p.i += 4
	if utf16.IsSurrogate(r) && r < 0xDC00 && len(p.s)-p.i >= 6 && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
		if lo, ok := hex4(p.s[p.i+2:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			p.i += 6
			return utf8.AppendRune(b, utf16.DecodeRune(r, lo)), nil
		}
	}
	if utf16.IsSurrogate(r) {
		return AppendSurrogate(b, uint16(r)), nil // JSON.parse keeps it
	}
	return utf8.AppendRune(b, r), nil
}

// hex4 decodes the four hex digits that start s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:4], 16, 16)
	return rune(n), err == nil
}

// AppendSurrogate appends the WTF-8 form of the surrogate unit u
// (0xD800..0xDFFF): the three bytes ED A0..BF 80..BF, which valid UTF-8
// never holds, as a Go string keeps what a JavaScript string keeps.
func AppendSurrogate(b []byte, u uint16) []byte {
	return append(b, 0xED, 0xA0|byte(u>>6&0x1F), 0x80|byte(u&0x3F))
}
