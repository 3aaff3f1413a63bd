package resolve

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/wire"
)

// fmValue is a node of pi's minimal frontmatter dialect: a plain string, or
// a nested map m (a JavaScript object, so in JS key order).
type fmValue struct {
	str string
	m   *ordered[fmValue]
}

// FrontmatterKey is one line of an agent file's frontmatter that pi's parser
// reads as a key, with where it stands, so an editor changes only lines.
type FrontmatterKey struct {
	Line   int    // the line's index in the file split at "\n"
	Lead   string // the whitespace before the key
	Key    string // quotes peeled, as pi reads it
	Value  string // trimmed, quotes kept; "" opens a map
	Parent int    // the index in Frontmatter.Keys of the map it is in; -1 the root
	Last   int    // the last line of what it holds (its own line for a value)
}

// Frontmatter is what pi's parser reads of an agent file's frontmatter:
// the key lines in file order, and the closing --- line.
type Frontmatter struct {
	Keys []FrontmatterKey
	End  int
}

// ReadFrontmatter reads the frontmatter of an agent file the way pi's own
// small parser does (ruleset-semantics §2.4), quirks included: no inline
// comment stripping, the key ends at the first colon, quotes are peeled one
// per side, indentation (in code points) nests. The error says why pi reads
// no frontmatter at all.
func ReadFrontmatter(text string) (Frontmatter, error) {
	lines := strings.Split(decodeUTF8(text), "\n")
	if strings.TrimSuffix(lines[0], "\r") != "---" || len(lines) < 2 {
		return Frontmatter{}, errors.New("the file does not start with a --- line, so pi reads no frontmatter from it")
	}
	fm := Frontmatter{End: -1}
	for i := 2; i < len(lines) && fm.End < 0; i++ {
		if strings.HasPrefix(lines[i], "---") {
			fm.End = i
		}
	}
	if fm.End < 0 {
		return Frontmatter{}, errors.New("the frontmatter has no closing --- line, so pi reads none of it")
	}
	type opened struct{ at, indent int }
	var open []opened // the map keys enclosing the current line, outermost first
	for i := 1; i < fm.End; i++ {
		line := strings.TrimSuffix(lines[i], "\r")
		trimmed := jsTrim(line)
		// The key needs a character before the colon once the line is
		// trimmed: "  : x" is skipped, not read as an empty key.
		colon := strings.IndexByte(trimmed, ':')
		if trimmed == "" || trimmed[0] == '#' || colon < 1 {
			continue
		}
		k := FrontmatterKey{Line: i, Lead: line[:len(line)-len(strings.TrimLeftFunc(line, wire.IsJSSpace))], Parent: -1, Last: i,
			Key: peelQuotes(jsTrim(trimmed[:colon])), Value: jsTrim(trimmed[colon+1:])}
		indent := utf8.RuneCountInString(k.Lead)
		for len(open) > 0 && open[len(open)-1].indent >= indent {
			open = open[:len(open)-1]
		}
		for _, o := range open {
			fm.Keys[o.at].Last = i
		}
		if len(open) > 0 {
			k.Parent = open[len(open)-1].at
		}
		fm.Keys = append(fm.Keys, k)
		if k.Value == "" {
			open = append(open, opened{len(fm.Keys) - 1, indent})
		}
	}
	return fm, nil
}

// parseFrontmatter builds the maps pi's parser builds from the frontmatter;
// nil when the file has none.
func parseFrontmatter(text string) *ordered[fmValue] {
	fm, err := ReadFrontmatter(text)
	if err != nil {
		return nil
	}
	root := newOrdered[fmValue]()
	maps := make([]*ordered[fmValue], len(fm.Keys)) // the map each map line opens
	for i, k := range fm.Keys {
		parent := root
		if k.Parent >= 0 {
			parent = maps[k.Parent]
		}
		// pi assigns obj[key]: for __proto__ that is the prototype setter,
		// which ignores a string and hides a map from the object's own keys,
		// so the key and everything under it are absent (decision 0026).
		proto := k.Key == protoKey
		switch {
		case k.Value == "":
			maps[i] = newOrdered[fmValue]()
			if !proto {
				parent.set(k.Key, fmValue{m: maps[i]})
			}
			continue
		case proto:
			continue
		}
		parent.set(k.Key, fmValue{str: FrontmatterString(k.Value)})
	}
	return root
}

// FrontmatterString is a key's value (FrontmatterKey.Value) as pi reads it:
// JavaScript's slice(1, -1) after startsWith and endsWith, so a matching
// pair of quotes goes and a lone quote character becomes the empty string.
func FrontmatterString(value string) string {
	if n := len(value); n > 0 && (value[0] == '"' || value[0] == '\'') && value[n-1] == value[0] {
		return value[1:max(n-1, 1)]
	}
	return value
}

// peelQuotes removes one leading and one trailing quote (' or "),
// independently of each other.
func peelQuotes(s string) string {
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
	if !ok || block.m == nil {
		return perms
	}
	surfaces, values := block.m.all()
	for i, surface := range surfaces {
		v := values[i]
		if v.m == nil {
			if IsState(v.str) {
				perms.set(surface, stateValue(entry{action: Action(v.str), origin: origin, file: file}))
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
	if v.m == nil {
		return entry{action: Action(v.str)}, IsState(v.str)
	}
	action, ok := v.m.get("action")
	if !ok || action.m != nil || action.str != string(Deny) {
		return entry{}, false
	}
	e := entry{action: Deny}
	if reason, ok := v.m.get("reason"); ok {
		if reason.m != nil {
			return entry{}, false
		}
		e.reason = reason.str
	}
	return e, true
}

func jsTrim(s string) string { return strings.TrimFunc(s, wire.IsJSSpace) }
