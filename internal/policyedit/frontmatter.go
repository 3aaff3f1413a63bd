package policyedit

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/resolve"
)

// fmLine is one line of an agent file's frontmatter that pi's parser reads.
type fmLine struct {
	indent int
	key    string // quotes peeled, as pi reads it
	value  string // trimmed, quotes kept
	parent int    // line index of the map it belongs to; -1 = the root
}

// editFrontmatter adds r to the permission: block of an agent file, changing
// only the lines it must: a new surface or pattern line, the state line of a
// surface that becomes a map. It reads the frontmatter with pi's own
// dialect (ruleset-semantics §2.4): a key ends at the first colon, quotes
// are peeled one per side, indentation nests.
func editFrontmatter(text string, r Rule) (string, error) {
	for _, s := range []string{r.Surface, r.Pattern} {
		if strings.Contains(s, ":") {
			return "", fmt.Errorf("%q holds a colon, which pi's frontmatter reader cannot keep in a key; use --scope global or project", s)
		}
	}
	lines := strings.Split(text, "\n")
	eol := ""
	if strings.HasSuffix(lines[0], "\r") {
		eol = "\r"
	}
	if strings.TrimSuffix(lines[0], "\r") != "---" {
		return "", errors.New("the file does not start with a --- line, so pi reads no frontmatter from it")
	}
	end := -1
	for i := 2; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "---") {
			end = i
			break
		}
	}
	if end < 0 {
		return "", errors.New("the frontmatter has no closing --- line, so pi reads none of it")
	}
	parsed := map[int]fmLine{}
	var stack []int
	for i := 1; i < end; i++ {
		line := strings.TrimSuffix(lines[i], "\r")
		trimmed := strings.TrimFunc(line, isSpace)
		colon := strings.IndexByte(trimmed, ':')
		if trimmed == "" || trimmed[0] == '#' || colon < 1 {
			continue
		}
		l := fmLine{
			indent: utf8.RuneCountInString(line[:len(line)-len(strings.TrimLeftFunc(line, isSpace))]),
			key:    resolve.PeelQuotes(strings.TrimFunc(trimmed[:colon], isSpace)),
			value:  strings.TrimFunc(trimmed[colon+1:], isSpace),
			parent: -1,
		}
		for len(stack) > 0 && parsed[stack[len(stack)-1]].indent >= l.indent {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			l.parent = stack[len(stack)-1]
		}
		parsed[i] = l
		if l.value == "" {
			stack = append(stack, i)
		}
	}
	// children lists the lines directly under map line p (-1: the root).
	children := func(p int, key string) []int {
		var out []int
		for i := 1; i < end; i++ {
			if l, ok := parsed[i]; ok && l.parent == p && (key == "" || l.key == key) {
				out = append(out, i)
			}
		}
		return out
	}
	// last is the last line of the block that line p opens.
	last := func(p int) int {
		at := p
		for i := p + 1; i < end; i++ {
			l, ok := parsed[i]
			for a := l.parent; ok && a >= 0; a = parsed[a].parent {
				if a == p {
					at = i
					break
				}
			}
		}
		return at
	}
	indentOf := func(i int) string {
		line := lines[i]
		return line[:len(line)-len(strings.TrimLeftFunc(line, isSpace))]
	}
	// childIndent is how deep lines under map line p sit.
	childIndent := func(p int, own string) string {
		if kids := children(p, ""); len(kids) > 0 {
			return indentOf(kids[0])
		}
		return own + "  "
	}
	ruleLines := func(indent string) []string {
		key := indent + `"` + r.Pattern + `":`
		if r.Reason == "" {
			return []string{key + " " + string(r.Action)}
		}
		return []string{key, indent + "  action: deny", indent + `  reason: "` + r.Reason + `"`}
	}
	drop := map[int]bool{}
	insert := func(after int, add []string) string {
		var out []string
		for i, line := range lines {
			if !drop[i] {
				out = append(out, line)
			}
			if i == after {
				for _, a := range add {
					out = append(out, a+eol)
				}
			}
		}
		return strings.Join(out, "\n")
	}

	perms := children(-1, "permission")
	switch {
	case len(perms) > 1:
		return "", errors.New("the frontmatter has more than one permission: key; merge them by hand first")
	case len(perms) == 0:
		block := append([]string{"permission:", "  " + fmKey(r.Surface) + ":"}, ruleLines("    ")...)
		return insert(end-1, block), nil
	case parsed[perms[0]].value != "":
		return "", fmt.Errorf("line %d: permission: has a value, not a map, so pi reads no rules from it", perms[0]+1)
	}
	perm := perms[0]
	surfIndent := childIndent(perm, indentOf(perm))
	surfaces := children(perm, r.Surface)
	switch {
	case len(surfaces) > 1:
		return "", fmt.Errorf("the permission block names %q more than once; merge them by hand first", r.Surface)
	case len(surfaces) == 0:
		block := append([]string{surfIndent + fmKey(r.Surface) + ":"}, ruleLines(surfIndent+"  ")...)
		return insert(last(perm), block), nil
	}
	s := surfaces[0]
	sl := parsed[s]
	if sl.value != "" {
		state := unquote(sl.value)
		if !isState(state) {
			return "", fmt.Errorf("line %d: %q is not a state pi reads (inline comments are not stripped); fix it first", s+1, strings.TrimSuffix(lines[s], "\r"))
		}
		// A state is shorthand for "*": state: spell it out, then add.
		head := strings.TrimSuffix(lines[s], "\r")
		lines[s] = head[:strings.IndexByte(head, ':')+1] + eol
		inner := indentOf(s) + "  "
		block := ruleLines(inner)
		if r.Pattern != "*" {
			block = append([]string{inner + `"*": ` + state}, block...)
		}
		return insert(s, block), nil
	}
	// The surface is a map: drop the pattern where it was, then add it last.
	inner := childIndent(s, indentOf(s))
	for _, old := range children(s, r.Pattern) {
		for i := old; i <= last(old); i++ {
			drop[i] = true
		}
	}
	return insert(last(s), ruleLines(inner)), nil
}

// fmKey writes a surface key bare when pi reads it back unchanged, else quoted.
func fmKey(k string) string {
	for _, c := range k {
		if !(c == '_' || c == '-' || c == '*' || c == '?' || c == '.' || unicode.IsLetter(c) || unicode.IsDigit(c)) {
			return `"` + k + `"`
		}
	}
	return k
}

// isSpace is JavaScript's trim set, near enough: Unicode spaces and the BOM.
func isSpace(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' }

// unquote removes a matching pair of quotes around a value, as pi does.
func unquote(v string) string {
	if n := len(v); n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n-1] == v[0] {
		return v[1 : n-1]
	}
	return v
}
