package resolve

import (
	"strings"
	"unicode/utf8"
)

// fmValue is a node of pi's minimal frontmatter dialect: a plain string or a
// nested map (isMap). Maps are JavaScript objects, so they keep JS key order.
type fmValue struct {
	str   string
	isMap bool
	m     *ordered[fmValue]
}

// parseFrontmatter reads the frontmatter of an agent file the way pi's own
// small parser does (ruleset-semantics §2.4), quirks included: no inline
// comment stripping, the key ends at the first colon, quotes are peeled one
// per side. It returns nil when the file has no frontmatter.
func parseFrontmatter(text string) *ordered[fmValue] {
	text = strings.ReplaceAll(decodeUTF8(text), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return nil
	}
	body := text[len("---\n"):]
	end := strings.Index(body, "\n---")
	if end < 0 {
		return nil
	}
	root := newOrdered[fmValue]()
	type open struct {
		indent int
		m      *ordered[fmValue]
	}
	stack := []open{{indent: -1, m: root}}
	for _, line := range strings.Split(body[:end], "\n") {
		trimmed := jsTrim(line)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		// The key needs a character before the colon once the line is
		// trimmed: "  : x" is skipped, not read as an empty key.
		colon := strings.IndexByte(trimmed, ':')
		if colon < 1 {
			continue
		}
		indent := utf8.RuneCountInString(line[:len(line)-len(jsTrimLeft(line))])
		key := PeelQuotes(jsTrim(trimmed[:colon]))
		value := jsTrim(trimmed[colon+1:])
		for len(stack) > 1 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		parent := stack[len(stack)-1].m
		// pi assigns obj[key]: for __proto__ that is the prototype setter,
		// which ignores a string and hides a map from the object's own keys,
		// so the key and everything under it are absent (decision 0026).
		proto := key == protoKey
		if value == "" {
			child := newOrdered[fmValue]()
			if !proto {
				parent.set(key, fmValue{isMap: true, m: child})
			}
			stack = append(stack, open{indent: indent, m: child})
			continue
		}
		if proto {
			continue
		}
		// JavaScript's slice(1, -1) after startsWith and endsWith: a lone
		// quote character becomes the empty string.
		if n := len(value); (value[0] == '"' || value[0] == '\'') && value[n-1] == value[0] {
			value = value[1:max(n-1, 1)]
		}
		parent.set(key, fmValue{str: value})
	}
	return root
}

// PeelQuotes removes one leading and one trailing quote (' or "),
// independently of each other.
func PeelQuotes(s string) string {
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		s = s[1:]
	}
	if s != "" && (s[len(s)-1] == '"' || s[len(s)-1] == '\'') {
		s = s[:len(s)-1]
	}
	return s
}

// agentPermissions normalises an agent file's root-level permission map
// tolerantly: invalid entries are dropped one by one, and a pattern map left
// without valid entries is dropped entirely.
func agentPermissions(text, origin, file string) *permissions {
	perms := newOrdered[surfaceValue]()
	fm := parseFrontmatter(text)
	if fm == nil {
		return perms
	}
	block, ok := fm.get("permission")
	if !ok || !block.isMap {
		return perms
	}
	surfaces, values := block.m.all()
	for i, surface := range surfaces {
		v := values[i]
		if !v.isMap {
			if isState(v.str) {
				perms.set(surface, surfaceValue{str: &entry{action: Action(v.str), origin: origin, file: file}})
			}
			continue
		}
		patterns := newOrdered[entry]()
		pats, raw := v.m.all()
		for j, pat := range pats {
			if e, ok := frontmatterEntry(raw[j]); ok {
				e.origin, e.file = origin, file
				patterns.set(pat, e)
			}
		}
		if patterns.Len() > 0 {
			perms.set(surface, surfaceValue{patterns: patterns})
		}
	}
	return perms
}

// frontmatterEntry accepts a state, or a {action: deny, reason?} map whose
// extra keys are tolerated.
func frontmatterEntry(v fmValue) (entry, bool) {
	if !v.isMap {
		return entry{action: Action(v.str)}, isState(v.str)
	}
	action, ok := v.m.get("action")
	if !ok || action.isMap || action.str != string(Deny) {
		return entry{}, false
	}
	e := entry{action: Deny}
	if reason, ok := v.m.get("reason"); ok {
		if reason.isMap {
			return entry{}, false
		}
		e.reason = reason.str
	}
	return e, true
}

// jsIsSpace is JavaScript's WhiteSpace and LineTerminator set, which
// String.prototype.trim removes (it differs from unicode.IsSpace on U+0085
// and U+FEFF).
func jsIsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func jsTrim(s string) string     { return strings.TrimFunc(s, jsIsSpace) }
func jsTrimLeft(s string) string { return strings.TrimLeftFunc(s, jsIsSpace) }
