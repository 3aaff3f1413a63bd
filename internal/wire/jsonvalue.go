package wire

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"math"
	"strconv"

	json "github.com/goccy/go-json"
)

// The tolerant readers decode into generic values and check each JSON type
// by hand, as pi's readers do with typeof. encoding/json is used for decoding
// because its generic decode keeps the last of duplicate keys (like
// JSON.parse), compares keys exactly, and never panics on bad input.
type object = map[string]any

// decodeJSON parses one JSON text the way JSON.parse would accept it: no BOM,
// nothing after the value. Numbers stay as stdjson.Number.
func decodeJSON(data []byte) (any, error) {
	if bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) {
		return nil, errors.New("starts with a UTF-8 BOM")
	}
	if !stdjson.Valid(data) {
		return nil, errors.New("not valid JSON")
	}
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
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
	n, ok := v.(stdjson.Number)
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
