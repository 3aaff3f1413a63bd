package resolve

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/permtui/permtui/internal/jsonparse"
	"github.com/permtui/permtui/internal/wire"
)

// entry is one pattern's decision inside a surface's pattern map, with the
// scope and file that last wrote it.
type entry struct {
	action Action
	reason string
	origin string
	file   string
}

// surfaceValue is a top-level permission value: a pattern map, or a state
// string (state), which pi reads as {"*": state}.
type surfaceValue struct {
	patterns *ordered[entry]
	state    bool
}

// stateValue is the value of a state string, e.
func stateValue(e entry) surfaceValue {
	m := newOrdered[entry]()
	m.set("*", e)
	return surfaceValue{patterns: m, state: true}
}

// permissions is one scope's (or the merged) permission object.
type permissions = ordered[surfaceValue]

// configFile is what a valid pi-permission-system config.json contributes.
type configFile struct {
	perms *permissions // nil when the file has no "permission" key
	yolo  *bool        // nil when the file has no "yoloMode" key
}

// topLevel is the NEW schema's key set (V20 keys plus the NEW ones), any
// other key rejecting the file (ruleset-semantics §2.2), each with the check
// of its value as NEW's schema does it, so a file pi rejects for a bad value
// is rejected here too (decision 0024). permission is read on its own;
// promptNotifications and commandEffects have no published shape we know:
// any value passes.
var topLevel = map[string]func(jsonparse.Value) error{
	"permission": nil, "promptNotifications": nil, "commandEffects": nil,
	"$schema":                   kindIs(jsonparse.String),
	"debugLog":                  kindIs(jsonparse.Bool),
	"permissionReviewLog":       kindIs(jsonparse.Bool),
	"yoloMode":                  kindIs(jsonparse.Bool),
	"doublePressToConfirm":      kindIs(jsonparse.Bool),
	"forwardingTimeoutMs":       positiveInteger,
	"promptMaxRows":             positiveInteger,
	"promptFieldMaxWidth":       positiveInteger,
	"reviewLogFieldMaxWidth":    positiveInteger,
	"toolInputPreviewMaxLength": positiveInteger,
	"toolTextSummaryMaxLength":  positiveInteger,
	"piInfrastructureReadPaths": listOf(nonEmptyString),
	"authorizerChain":           listOf(nonEmptyString),
	"permissionDialogKeys": strictObject(map[string]func(jsonparse.Value) error{
		"approve": kindIs(jsonparse.String), "approveSession": kindIs(jsonparse.String), "approveSessionBoth": kindIs(jsonparse.String),
		"deny": kindIs(jsonparse.String), "denyWithReason": kindIs(jsonparse.String),
	}),
	"shellTools": recordOf(strictObject(map[string]func(jsonparse.Value) error{
		"commandArgument": nonEmptyString, "workdirArgument": nonEmptyString,
	}, "commandArgument")),
	"authorizerTrust": recordOf(listOf(func(v jsonparse.Value) error {
		if v.Kind != jsonparse.String || (v.Str != "path" && v.Str != "external_directory") {
			return errors.New(`must be "path" or "external_directory"`)
		}
		return nil
	})),
}

func kindIs(kind jsonparse.Kind) func(jsonparse.Value) error {
	return func(v jsonparse.Value) error {
		if v.Kind != kind {
			return fmt.Errorf("is %s, not %s", v.Kind, kind)
		}
		return nil
	}
}

func nonEmptyString(v jsonparse.Value) error {
	if v.Kind != jsonparse.String || v.Str == "" {
		return errors.New("must be a non-empty string")
	}
	return nil
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: zod's int()
// rejects every integer above it, so pi rejects the file.
const maxSafeInteger = 1<<53 - 1

func positiveInteger(v jsonparse.Value) error {
	f, err := strconv.ParseFloat(v.Str, 64)
	if v.Kind != jsonparse.Number || err != nil || f < 1 || f != math.Trunc(f) || f > maxSafeInteger {
		return errors.New("must be a whole number from 1 to 2^53-1")
	}
	return nil
}

func listOf(item func(jsonparse.Value) error) func(jsonparse.Value) error {
	return func(v jsonparse.Value) error {
		if v.Kind != jsonparse.Array {
			return fmt.Errorf("is %s, not an array", v.Kind)
		}
		for i, it := range v.Items() {
			if err := item(it); err != nil {
				return fmt.Errorf("[%d] %w", i, err)
			}
		}
		return nil
	}
}

func recordOf(field func(jsonparse.Value) error) func(jsonparse.Value) error {
	return func(v jsonparse.Value) error {
		if v.Kind != jsonparse.Object {
			return fmt.Errorf("is %s, not an object", v.Kind)
		}
		for _, m := range v.Members() {
			if m.Key == protoKey {
				continue // zod's record parser skips it unchecked
			}
			if m.Key == "" {
				return errors.New("has an empty key")
			}
			if err := field(m.Value); err != nil {
				return fmt.Errorf("[%q] %w", m.Key, err)
			}
		}
		return nil
	}
}

func strictObject(fields map[string]func(jsonparse.Value) error, required ...string) func(jsonparse.Value) error {
	return func(v jsonparse.Value) error {
		if v.Kind != jsonparse.Object {
			return fmt.Errorf("is %s, not an object", v.Kind)
		}
		for _, m := range v.Members() {
			check, ok := fields[m.Key]
			if !ok {
				return fmt.Errorf("has the unknown key %q", m.Key)
			}
			if err := check(m.Value); err != nil {
				return fmt.Errorf(".%s %w", m.Key, err)
			}
		}
		for _, k := range required {
			if v.Get(k).Kind == jsonparse.Absent {
				return fmt.Errorf("lacks %s", k)
			}
		}
		return nil
	}
}

// MaxReasonLength is pi's schema limit on a deny reason, in code points as
// zod's string max counts them (a surrogate pair is one, and so is a lone
// surrogate).
const MaxReasonLength = 500

// protoKey is the one key zod's record parser skips without checking its
// value, so in a record (permission, a pattern map, shellTools,
// authorizerTrust) it is absent whatever it holds (decision 0026).
const protoKey = "__proto__"

// parseConfig strips JSONC comments, parses strictly and validates the whole
// file; any violation rejects it with an error saying where.
func parseConfig(text, origin, file string) (configFile, error) {
	root, err := parseJSON(stripJSONComments(text))
	if err != nil {
		return configFile{}, err
	}
	if root.Kind != jsonparse.Object {
		return configFile{}, fmt.Errorf("the file holds %s, not an object", root.Kind)
	}
	var cfg configFile
	for _, m := range root.Members() {
		key, val := m.Key, m.Value
		check, known := topLevel[key]
		if !known {
			return configFile{}, fmt.Errorf("unknown top-level key %q", key)
		}
		if check != nil {
			if err := check(val); err != nil {
				return configFile{}, fmt.Errorf("%s %w", key, err)
			}
		}
		switch key {
		case "yoloMode":
			cfg.yolo = &val.Bool
		case "permission":
			perms, err := parsePermission(val, origin, file)
			if err != nil {
				return configFile{}, err
			}
			cfg.perms = perms
		}
	}
	return cfg, nil
}

func parsePermission(val jsonparse.Value, origin, file string) (*permissions, error) {
	if val.Kind != jsonparse.Object {
		return nil, fmt.Errorf("permission is %s, not an object", val.Kind)
	}
	perms := newOrdered[surfaceValue]()
	for _, m := range val.Members() {
		surface, v := m.Key, m.Value
		if surface == protoKey {
			continue
		}
		where := func() string { return fmt.Sprintf("permission[%q]", surface) }
		if surface == "" {
			return nil, fmt.Errorf("permission has an empty key")
		}
		// The family members are the only legal keys of the path_* and
		// external_directory_* shapes (ADR 0013).
		if _, member := Family(surface); !member && (strings.HasPrefix(surface, "path_") || strings.HasPrefix(surface, "external_directory_")) {
			return nil, fmt.Errorf("%s is not a directional key (only path_read, path_write, external_directory_read, external_directory_write)", where())
		}
		switch v.Kind {
		case jsonparse.String:
			if !IsState(v.Str) {
				return nil, fmt.Errorf("%s is %q, not allow, ask or deny", where(), v.Str)
			}
			perms.set(surface, stateValue(entry{action: Action(v.Str), origin: origin, file: file}))
		case jsonparse.Object:
			patterns := newOrdered[entry]()
			for _, pm := range v.Members() {
				pat := pm.Key
				if pat == protoKey {
					continue
				}
				e, err := parsePatternEntry(pm.Value)
				if err != nil {
					return nil, fmt.Errorf("%s[%q]%w", where(), pat, err)
				}
				if pat == "" {
					return nil, fmt.Errorf("%s has an empty pattern", where())
				}
				e.origin, e.file = origin, file
				patterns.set(pat, e)
			}
			perms.set(surface, surfaceValue{patterns: patterns})
		default:
			return nil, fmt.Errorf("%s is %s, not a state or a pattern map", where(), v.Kind)
		}
	}
	return perms, nil
}

// parsePatternEntry accepts a state string or the strict deny object
// {"action":"deny","reason"?:string}. Errors continue the caller's location.
func parsePatternEntry(v jsonparse.Value) (entry, error) {
	switch v.Kind {
	case jsonparse.String:
		if !IsState(v.Str) {
			return entry{}, fmt.Errorf(" is %q, not allow, ask or deny", v.Str)
		}
		return entry{action: Action(v.Str)}, nil
	case jsonparse.Object:
		e := entry{}
		for _, m := range v.Members() {
			f := m.Value
			switch m.Key {
			case "action":
				if f.Kind != jsonparse.String || f.Str != string(Deny) {
					return entry{}, errors.New(`.action must be "deny"`)
				}
				e.action = Deny
			case "reason":
				if f.Kind != jsonparse.String {
					return entry{}, fmt.Errorf(".reason is %s, not a string", f.Kind)
				}
				if wire.CodePoints(f.Str) > MaxReasonLength {
					return entry{}, fmt.Errorf(".reason is longer than %d characters", MaxReasonLength)
				}
				e.reason = f.Str
			default:
				return entry{}, fmt.Errorf(" has the unknown key %q (a deny object allows only action and reason)", m.Key)
			}
		}
		if e.action != Deny {
			return entry{}, errors.New(` lacks "action": "deny"`)
		}
		return e, nil
	default:
		return entry{}, fmt.Errorf(" is %s, not a state or a deny object", v.Kind)
	}
}
