package wire

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/jsonparse"
)

// The tolerant readers decode with the one JSON reader (JSON.parse's
// grammar, the last of duplicate keys) and check each JSON type by hand, as
// pi's readers do with typeof. An object is a jsonparse.Value of kind
// Object; a missing key reads as kind Absent.
type object = jsonparse.Value

// maxJSONDepth bounds nesting as encoding/json does.
const maxJSONDepth = 10000

// decodeJSON parses one JSON text the way JSON.parse would accept it: no BOM,
// nothing after the value. Numbers keep their text (asFloat refuses one
// beyond float64, which JSON.parse reads as Infinity).
func decodeJSON(data []byte) (jsonparse.Value, error) {
	return jsonparse.Parse(string(data), maxJSONDepth)
}

func present(v jsonparse.Value) bool { return v.Kind != jsonparse.Absent }

func asObject(v jsonparse.Value) (object, bool) { return v, v.Kind == jsonparse.Object }

// asString reads a JSON string as a copy: the reader's strings share the
// text, which a kept request must not hold (a short id from a 1 MiB file
// would keep the megabyte alive).
func asString(v jsonparse.Value) (string, bool) {
	if v.Kind != jsonparse.String {
		return "", false
	}
	return strings.Clone(v.Str), true
}

func asBool(v jsonparse.Value) (bool, bool) { return v.Bool, v.Kind == jsonparse.Bool }

func asArray(v jsonparse.Value) ([]jsonparse.Value, bool) {
	return v.Items(), v.Kind == jsonparse.Array
}

// asNullableString accepts a string or null; an absent key is neither.
func asNullableString(v jsonparse.Value) (*string, bool) {
	switch v.Kind {
	case jsonparse.Null:
		return nil, true
	case jsonparse.String:
		s, _ := asString(v)
		return &s, true
	}
	return nil, false
}

// asFloat reads a JSON number; it fails for numbers beyond float64 range
// (JSON.parse would give Infinity).
func asFloat(v jsonparse.Value) (float64, bool) {
	if v.Kind != jsonparse.Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Str, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// asOptionalString accepts a string or an absent key (nil).
func asOptionalString(v jsonparse.Value) (*string, bool) {
	if !present(v) {
		return nil, true
	}
	s, ok := asString(v)
	return &s, ok
}

func asStringSlice(v jsonparse.Value) ([]string, bool) {
	arr, ok := asArray(v)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := asString(e)
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
