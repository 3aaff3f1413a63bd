// Package policyedit turns a person's decision into a rule in pi's own policy
// files: it finds the file for a scope, edits it in place (JSONC through
// hujson, agent frontmatter line by line), checks under pi's ordering that the
// new rule decides what the person asked about, and writes it safely (backup,
// temp + fsync + rename, reload and verify, restore on failure).
package policyedit

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// Scope says which of pi's policy files a rule goes to.
type Scope string

const (
	ScopeGlobal  Scope = "global"  // <agentDir>/extensions/pi-permission-system/config.json
	ScopeProject Scope = "project" // <project>/.pi/extensions/pi-permission-system/config.json
	ScopeAgent   Scope = "agent"   // the permission: frontmatter of the agent's file
)

// ParseScope reads a --scope value.
func ParseScope(s string) (Scope, error) {
	switch sc := Scope(s); sc {
	case ScopeGlobal, ScopeProject, ScopeAgent:
		return sc, nil
	}
	return "", fmt.Errorf("scope %q is not global, project or agent", s)
}

// Rule is one permission rule to write: surface → pattern → action.
type Rule struct {
	Surface string
	Pattern string
	Action  resolve.Action
	Reason  string // deny only
}

// Validate refuses rules pi would not read as written.
func (r Rule) Validate() error {
	switch {
	case r.Surface == "":
		return errors.New("the surface is empty")
	case r.Surface == "*":
		return errors.New(`surface "*" is pi's universal fallback, not a rule surface; set it by hand`)
	case strings.ContainsAny(r.Surface, "*?"):
		// pi matches a rule's surface as a pattern against every tool name.
		return fmt.Errorf("surface %q is a glob: pi would match it against every surface's name; write a rule per surface, or set it by hand", r.Surface)
	case strings.TrimSpace(r.Surface) != r.Surface:
		return fmt.Errorf("surface %q has surrounding spaces: pi trims the tool name it judges, so the rule would match no surface", r.Surface)
	case r.Pattern == "":
		return errors.New("the pattern is empty")
	case !resolve.IsState(string(r.Action)):
		return fmt.Errorf("action %q is not allow, ask or deny", r.Action)
	case r.Reason != "" && r.Action != resolve.Deny:
		return errors.New("a reason goes with deny only")
	case wire.CodePoints(r.Reason) > resolve.MaxReasonLength:
		return fmt.Errorf("the reason is longer than pi's %d characters", resolve.MaxReasonLength)
	}
	for _, s := range []string{r.Surface, r.Pattern, r.Reason} {
		if strings.ContainsFunc(s, unicode.IsControl) {
			return fmt.Errorf("%q holds a control character", s)
		}
		// A bidi override or a rune that prints as nothing makes a terminal
		// or editor show another rule than the one pi would match.
		if strings.ContainsFunc(s, unseen) {
			return fmt.Errorf("%q holds an invisible or reordering character (bidi, zero-width, filler, variation selector, line separator)", s)
		}
	}
	return nil
}

// unseen: a rune a terminal must not show as it is (termsafe.Hidden) or
// that prints as nothing: Unicode's Default_Ignorable_Code_Point (format
// characters, variation selectors and the other ignorables, which include
// the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0) and the braille
// blank U+2800, which fonts draw empty.
func unseen(r rune) bool {
	return termsafe.Hidden(r) || r == '\u2800' ||
		unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// String is the rule in one line, e.g. bash "npm install *" → allow.
func (r Rule) String() string {
	s := fmt.Sprintf("%s %q → %s", r.Surface, r.Pattern, r.Action)
	if r.Reason != "" {
		s += fmt.Sprintf(" (reason %q)", r.Reason)
	}
	return s
}
