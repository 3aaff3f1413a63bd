package wire

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

// The tolerant readers decode into generic values and check each JSON type
// by hand, as pi's readers do with typeof. The generic decode keeps the last
// of duplicate keys (like JSON.parse) and compares keys exactly;
// FuzzDecodeJSONAgreesWithStdlib holds it to encoding/json's answers.
type object = map[string]any

// decodeJSON parses one JSON text the way JSON.parse would accept it: no BOM,
// nothing after the value. Numbers stay as json.Number (asFloat refuses one
// beyond float64, which JSON.parse reads as Infinity).
func decodeJSON(data []byte) (any, error) {
	if bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) {
		return nil, errors.New("starts with a UTF-8 BOM")
	}
	if !validJSON(data) {
		return nil, errors.New("not valid JSON")
	}
	if !utf8.Valid(data) {
		data = replaceInvalidUTF8(data)
	}
	data = keepLoneSurrogates(data)
	v, err := decodeValue(data)
	if err == nil {
		return v, nil
	}
	// The decoder refuses the whole text for a number beyond float64.
	quoted, ok := quoteOutOfRange(data)
	if !ok {
		return nil, err
	}
	if v, err = decodeValue(quoted); err != nil {
		return nil, err
	}
	return unquoteOutOfRange(v), nil
}

// decodeValue decodes a text validJSON accepted. It uses the stream decoder:
// Unmarshal's string unescaping trips the race detector's pointer checks.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// replaceInvalidUTF8 replaces each byte that is not part of valid UTF-8 by
// U+FFFD, as encoding/json does inside strings (outside them the text is
// invalid either way).
func replaceInvalidUTF8(data []byte) []byte {
	out := make([]byte, 0, len(data)+16)
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, data[:size]...)
		}
		data = data[size:]
	}
	return out
}

// outOfRange starts a string standing for a number beyond float64. After
// replaceInvalidUTF8 no string from the text can start with it.
const outOfRange = "\xff"

// quoteOutOfRange turns every number literal beyond float64 into a string
// marked with outOfRange; ok is false when there is none.
func quoteOutOfRange(data []byte) (out []byte, ok bool) {
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			out = append(out, c)
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(data) && strings.IndexByte("0123456789+-.eE", data[j]) >= 0 {
				j++
			}
			lit := data[i:j]
			if _, err := strconv.ParseFloat(string(lit), 64); errors.Is(err, strconv.ErrRange) {
				out = append(append(append(append(out, '"'), outOfRange...), lit...), '"')
				ok = true
			} else {
				out = append(out, lit...)
			}
			i = j - 1
		default:
			out = append(out, c)
		}
	}
	return out, ok
}

// unquoteOutOfRange turns the strings quoteOutOfRange made back into numbers.
func unquoteOutOfRange(v any) any {
	switch v := v.(type) {
	case string:
		if lit, ok := strings.CutPrefix(v, outOfRange); ok {
			return json.Number(lit)
		}
	case object:
		for k, e := range v {
			v[k] = unquoteOutOfRange(e)
		}
	case []any:
		for i, e := range v {
			v[i] = unquoteOutOfRange(e)
		}
	}
	return v
}

func asObject(v any) (object, bool) {
	o, ok := v.(object)
	return o, ok
}

func asString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

// asNullableString accepts a string or null; the key must be present.
func asNullableString(o object, key string) (*string, bool) {
	v, present := o[key]
	if !present {
		return nil, false
	}
	if v == nil {
		return nil, true
	}
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	return &s, true
}

// asFloat reads a JSON number; it fails for numbers beyond float64 range
// (JSON.parse would give Infinity).
func asFloat(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// asInt64 reads a JSON number that is an integer within int64 range.
func asInt64(v any) (int64, bool) {
	f, ok := asFloat(v)
	if !ok || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

func asStringSlice(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// marshalCompact encodes v like JSON.stringify: compact, no HTML escaping,
// no trailing newline.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
