package policyedit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/permtui/permtui/internal/resolve"
)

// newConfig is the text of a config file permtui creates.
const newConfig = "{\n  \"permission\": {}\n}\n"

// editConfig adds r to the permission map of a JSONC config. Only the members
// it touches change: comments, key order, indentation and trailing commas
// stay as written. The rule goes last in its surface's pattern map, where
// pi's last-match-wins gives it the say over every earlier pattern
// (decision 0070); a pattern already there moves to that place.
func editConfig(text []byte, r Rule) ([]byte, error) {
	out, err := editConfigLF(text, r)
	if err != nil {
		return nil, err
	}
	// The lines added end in \n; in a file whose every line ends in \r\n,
	// they end as the others do.
	if n := bytes.Count(text, []byte("\n")); n > 0 && bytes.Count(text, []byte("\r\n")) == n {
		out = bytes.ReplaceAll(bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	}
	return out, nil
}

func editConfigLF(text []byte, r Rule) ([]byte, error) {
	root, err := hujson.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("cannot be read as JSONC: %w", err)
	}
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, errors.New("the file is not a JSON object")
	}
	unit := indentUnit(text)
	perm, err := memberObject(top, "permission", "", unit)
	if err != nil {
		return nil, err
	}
	permIndent := childIndent(top, "", unit)
	surfIndent := childIndent(perm, permIndent, unit)
	value := ruleValue(r)

	idx, err := findMember(perm, r.Surface)
	if err != nil {
		return nil, err
	}
	if idx < 0 {
		obj := "{" + "\n" + surfIndent + unit + quote(r.Pattern) + ": " + value + "\n" + surfIndent + "}"
		if !multiline(perm) && len(perm.Members) > 0 {
			obj = "{" + quote(r.Pattern) + ": " + value + "}"
		}
		return pack(&root, appendMember(perm, r.Surface, obj, permIndent, surfIndent))
	}
	sv := &perm.Members[idx].Value
	switch v := sv.Value.(type) {
	case hujson.Literal:
		if v.Kind() != '"' || !resolve.IsState(v.String()) {
			return nil, fmt.Errorf("permission[%q] is %s, not a state or a pattern map", r.Surface, v)
		}
		return pack(&root, setState(sv, v, r, multiline(perm), surfIndent, unit))
	case *hujson.Object:
		return pack(&root, putPatternLast(v, r, surfIndent, unit))
	}
	return nil, fmt.Errorf("permission[%q] is not a state or a pattern map", r.Surface)
}

// setState puts r where a surface's value is the state v: the state
// itself for a plain "*" rule, else v spelled out as {"*": v} with r added.
func setState(sv *hujson.Value, v hujson.Literal, r Rule, multi bool, surfIndent, unit string) error {
	value := ruleValue(r)
	if r.Pattern == "*" && r.Reason == "" {
		sv.Value = hujson.String(string(r.Action))
		return nil
	}
	members := []string{`"*": ` + string(v), quote(r.Pattern) + ": " + value}
	if r.Pattern == "*" {
		members = []string{`"*": ` + value}
	}
	obj := "{" + strings.Join(members, ", ") + "}"
	if multi {
		inner := "\n" + surfIndent + unit
		obj = "{" + inner + strings.Join(members, ","+inner) + "\n" + surfIndent + "}"
	}
	nv, err := hujson.Parse([]byte(obj))
	if err != nil {
		return err
	}
	nv.BeforeExtra, nv.AfterExtra = sv.BeforeExtra, sv.AfterExtra
	*sv = nv
	return nil
}

// putPatternLast puts r's pattern last in the surface's pattern map v,
// moving it there with its comments when it is there already.
func putPatternLast(v *hujson.Object, r Rule, surfIndent, unit string) error {
	i, err := findMember(v, r.Pattern)
	if err != nil {
		return err
	}
	var above, trailing []byte
	indent := childIndent(v, surfIndent, unit) // as it was, should the pattern be the only member
	if i >= 0 {
		above, trailing = removeMember(v, i)
	}
	if err := appendMember(v, r.Pattern, ruleValue(r), surfIndent, indent); err != nil {
		return err
	}
	m := &v.Members[len(v.Members)-1].Name
	switch {
	case bytes.IndexByte(above, '\n') >= 0:
		m.BeforeExtra = append(m.BeforeExtra[:max(0, bytes.LastIndexByte(m.BeforeExtra, '\n'))], above...)
	case len(above) > 0: // a comment on the member's own line goes before its name
		m.BeforeExtra = append(m.BeforeExtra, bytes.TrimLeft(above, " \t")...)
	}
	v.AfterExtra = append(trailing, v.AfterExtra...)
	return nil
}

// ruleValue is the JSON text of a rule's action.
func ruleValue(r Rule) string {
	if r.Reason != "" {
		return `{"action": "deny", "reason": ` + quote(r.Reason) + "}"
	}
	return quote(string(r.Action))
}

// quote is s as JSON string text.
func quote(s string) string { return string(hujson.String(s)) }

// pack is the edited file, or the edit's error.
func pack(root *hujson.Value, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return root.Pack(), nil
}

// memberObject returns the object under key, adding an empty one at the end
// when it is missing.
func memberObject(obj *hujson.Object, key, indent, unit string) (*hujson.Object, error) {
	i, err := findMember(obj, key)
	if err != nil {
		return nil, err
	}
	if i < 0 {
		if err := appendMember(obj, key, "{}", indent, childIndent(obj, indent, unit)); err != nil {
			return nil, err
		}
		i = len(obj.Members) - 1
	}
	o, ok := obj.Members[i].Value.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%q is not an object", key)
	}
	return o, nil
}

// findMember returns the index of key in obj, -1 when absent. A key written
// twice is refused: pi keeps the last value in the first slot, and an edit
// of either spelling would mislead whoever reads the file next.
func findMember(obj *hujson.Object, key string) (int, error) {
	at := -1
	for i, m := range obj.Members {
		if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == key {
			if at >= 0 {
				return -1, fmt.Errorf("the key %q is written twice in one object; merge the two by hand first", key)
			}
			at = i
		}
	}
	return at, nil
}

// appendMember adds key: valueText as the last member of obj, laid out like
// its siblings; a trailing comma stays where the file had one.
func appendMember(obj *hujson.Object, key, valueText, ownIndent, indent string) error {
	v, err := hujson.Parse([]byte(valueText))
	if err != nil {
		return err
	}
	v.BeforeExtra = hujson.Extra(" ")
	m := hujson.ObjectMember{Name: hujson.Value{Value: hujson.String(key)}, Value: v}
	n := len(obj.Members)
	switch {
	case !multiline(obj) && n > 0:
		m.Name.BeforeExtra = hujson.Extra(" ")
	default:
		// Comments that trail the last member stay on its line; the
		// closing brace keeps its own line and indentation.
		after := []byte(obj.AfterExtra)
		nl := bytes.LastIndexByte(after, '\n')
		head, tail := []byte{}, []byte("\n"+ownIndent)
		if nl >= 0 {
			head, tail = after[:nl], after[nl:]
		}
		m.Name.BeforeExtra = hujson.Extra(string(head) + "\n" + indent)
		obj.AfterExtra = hujson.Extra(tail)
	}
	if n > 0 && obj.Members[n-1].Value.AfterExtra != nil {
		m.Value.AfterExtra = hujson.Extra{} // keep the trailing comma
	}
	obj.Members = append(obj.Members, m)
	return nil
}

// removeMember drops member i; a trailing comma moves to the new last member.
// Each comment stays with the line it is on: one after the previous member
// stays there, and the comment lines above member i (above, from the
// newline that ends the previous line, or all that precedes its name on one
// line) and the comment after it on its line (trailing) are returned, to go
// with it.
func removeMember(obj *hujson.Object, i int) (above, trailing []byte) {
	comma := obj.Members[len(obj.Members)-1].Value.AfterExtra != nil
	own := obj.Members[i].Name.BeforeExtra
	// Without a newline (an object on one line) everything before the
	// name is the member's own.
	prev, lines := []byte(nil), own
	if nl := bytes.IndexByte(own, '\n'); nl >= 0 {
		prev, lines = own[:nl], own[nl:]
	}
	next := &obj.AfterExtra
	if i+1 < len(obj.Members) {
		next = &obj.Members[i+1].Name.BeforeExtra
	}
	if nl := bytes.IndexByte(*next, '\n'); nl >= 0 {
		trailing = bytes.Clone((*next)[:nl])
		*next = append(bytes.Clone(prev), (*next)[nl:]...)
	}
	if len(bytes.TrimSpace(lines)) > 0 {
		above = bytes.Clone(lines)
	}
	obj.Members = append(obj.Members[:i], obj.Members[i+1:]...)
	if n := len(obj.Members); n > 0 && comma && obj.Members[n-1].Value.AfterExtra == nil {
		obj.Members[n-1].Value.AfterExtra = hujson.Extra{}
	}
	return above, trailing
}

// multiline reports whether obj's members sit on lines of their own.
func multiline(obj *hujson.Object) bool {
	if len(obj.Members) == 0 {
		return true
	}
	return bytes.ContainsRune(obj.Members[0].Name.BeforeExtra, '\n')
}

// childIndent is the indentation of obj's members: as its first member has
// it, else one unit deeper than the object's own.
func childIndent(obj *hujson.Object, indent, unit string) string {
	if len(obj.Members) > 0 {
		b := obj.Members[0].Name.BeforeExtra
		if nl := bytes.LastIndexByte(b, '\n'); nl >= 0 {
			return string(b[nl+1:])
		}
	}
	return indent + unit
}

// indentUnit is the file's first indentation, or two spaces.
func indentUnit(text []byte) string {
	for _, line := range strings.Split(string(text), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}
