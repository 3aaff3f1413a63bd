package policyedit

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/permtui/permtui/internal/resolve"
)

// fmEdit is an agent file being given a rule: its lines, and where pi's
// parser finds the frontmatter's keys in them (resolve.ReadFrontmatter, the
// one reader of the dialect), so the edit only replaces and inserts lines.
type fmEdit struct {
	lines []string
	eol   string // "\r" when the file's lines end in CRLF
	fm    resolve.Frontmatter
	r     Rule
}

// editFrontmatter adds r to the permission: block of an agent file, changing
// only the lines it must: a new surface or pattern line, the state line of a
// surface that becomes a map.
func editFrontmatter(text string, r Rule) (string, error) {
	for _, s := range []string{r.Surface, r.Pattern} {
		if strings.Contains(s, ":") {
			return "", fmt.Errorf("%q holds a colon, which pi's frontmatter reader cannot keep in a key; use --scope global or project", s)
		}
	}
	fm, err := resolve.ReadFrontmatter(text)
	if err != nil {
		return "", err
	}
	e := fmEdit{lines: strings.Split(text, "\n"), fm: fm, r: r}
	if strings.HasSuffix(e.lines[0], "\r") {
		e.eol = "\r"
	}
	perms := e.children(-1, "permission")
	switch {
	case len(perms) > 1:
		return "", errors.New("the frontmatter has more than one permission: key; merge them by hand first")
	case len(perms) == 0:
		block := append([]string{"permission:", "  " + fmKey(r.Surface) + ":"}, e.ruleLines("    ")...)
		return e.insert(fm.End-1, block, nil), nil
	case fm.Keys[perms[0]].Value != "":
		return "", fmt.Errorf("line %d: permission: has a value, not a map, so pi reads no rules from it", fm.Keys[perms[0]].Line+1)
	}
	perm := perms[0]
	surfaces := e.children(perm, r.Surface)
	switch {
	case len(surfaces) > 1:
		return "", fmt.Errorf("the permission block names %q more than once; merge them by hand first", r.Surface)
	case len(surfaces) == 0:
		indent := e.childIndent(perm)
		block := append([]string{indent + fmKey(r.Surface) + ":"}, e.ruleLines(indent+"  ")...)
		return e.insert(fm.Keys[perm].Last, block, nil), nil
	}
	s := fm.Keys[surfaces[0]]
	if s.Value != "" {
		return e.spellOutState(s)
	}
	// The surface is a map: drop the pattern where it was, then add it last.
	drop := map[int]bool{}
	for _, old := range e.children(surfaces[0], r.Pattern) {
		for i := fm.Keys[old].Line; i <= fm.Keys[old].Last; i++ {
			drop[i] = true
		}
	}
	return e.insert(s.Last, e.ruleLines(e.childIndent(surfaces[0])), drop), nil
}

// spellOutState turns the state line of surface s into a map: a state is
// shorthand for "*": state, so that line comes first, then the rule.
func (e fmEdit) spellOutState(s resolve.FrontmatterKey) (string, error) {
	state := resolve.FrontmatterString(s.Value)
	if !resolve.IsState(state) {
		return "", fmt.Errorf("line %d: %q is not a state pi reads (inline comments are not stripped); fix it first", s.Line+1, strings.TrimSuffix(e.lines[s.Line], "\r"))
	}
	head := strings.TrimSuffix(e.lines[s.Line], "\r")
	e.lines[s.Line] = head[:strings.IndexByte(head, ':')+1] + e.eol
	inner := s.Lead + "  "
	block := e.ruleLines(inner)
	if e.r.Pattern != "*" {
		block = append([]string{inner + `"*": ` + state}, block...)
	}
	return e.insert(s.Line, block, nil), nil
}

// children are the keys directly in map key p (-1: the root) named key.
func (e fmEdit) children(p int, key string) []int {
	var out []int
	for i, k := range e.fm.Keys {
		if k.Parent == p && k.Key == key {
			out = append(out, i)
		}
	}
	return out
}

// childIndent is how deep the keys in map key p sit: as its first key does,
// or two spaces deeper than p when it has none.
func (e fmEdit) childIndent(p int) string {
	for _, k := range e.fm.Keys[p+1:] {
		if k.Parent == p {
			return k.Lead
		}
	}
	return e.fm.Keys[p].Lead + "  "
}

// ruleLines are the lines of the rule's pattern entry at indent.
func (e fmEdit) ruleLines(indent string) []string {
	key := indent + `"` + e.r.Pattern + `":`
	if e.r.Reason == "" {
		return []string{key + " " + string(e.r.Action)}
	}
	return []string{key, indent + "  action: deny", indent + `  reason: "` + e.r.Reason + `"`}
}

// insert is the file with the lines in drop left out and add after line
// after, each ending as the file's lines do.
func (e fmEdit) insert(after int, add []string, drop map[int]bool) string {
	var out []string
	for i, line := range e.lines {
		if !drop[i] {
			out = append(out, line)
		}
		if i == after {
			for _, a := range add {
				out = append(out, a+e.eol)
			}
		}
	}
	return strings.Join(out, "\n")
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
