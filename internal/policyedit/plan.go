package policyedit

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/aymanbagabas/go-udiff/lcs"

	"github.com/permtui/permtui/internal/resolve"
)

// Change is a rule edit checked but not yet written.
type Change struct {
	Target  Target
	Real    string // the file a write really changes (Target.File, links resolved)
	Rule    Rule
	Facts   resolve.Query // what the person asked about: the rule must decide it
	Old     []byte        // the file as read ("" when it does not exist)
	New     []byte
	Existed bool
	// Current and Edited are that policy as it is and with the edit, as Plan
	// loaded them: judge with these rather than load each file again.
	Current, Edited *resolve.Policy
	// Loosens is every verdict the edit makes looser that the person did
	// not name (AuthorityDiff less Unnamed), in any view and scope.
	Loosens []Loosening
}

// IsNewRule reports whether ref is the rule the change writes (its surface
// included: another surface's rule with the same pattern in the same file
// is not it).
func (c *Change) IsNewRule(ref *resolve.RuleRef) bool { return isRule(ref, c.Target.File, c.Rule) }

// Diff is the change as a unified diff of the file, line by line: a
// character diff shows the line an insertion follows as taken out and put
// back.
func (c *Change) Diff() string {
	old, next := string(c.Old), string(c.New)
	// The edits are computed from old, so they cannot be inconsistent with it.
	d, _ := udiff.ToUnified(c.Real, c.Real, old, lineEdits(old, next), udiff.DefaultContextLines)
	return d
}

// lineEdits diffs a and b as sequences of whole lines: each distinct line
// is one rune for the LCS, and each difference becomes an edit of a's bytes.
func lineEdits(a, b string) []udiff.Edit {
	ids := map[string]rune{}
	split := func(s string) (lines []string, seq []rune) {
		lines = strings.SplitAfter(s, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for _, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = rune(len(ids))
				ids[l] = id
			}
			seq = append(seq, id)
		}
		return lines, seq
	}
	al, as := split(a)
	bl, bs := split(b)
	offset := make([]int, len(al)+1)
	for i, l := range al {
		offset[i+1] = offset[i] + len(l)
	}
	var edits []udiff.Edit
	for _, d := range lcs.DiffRunes(as, bs) {
		edits = append(edits, udiff.Edit{Start: offset[d.Start], End: offset[d.End], New: strings.Join(bl[d.ReplStart:d.ReplEnd], "")})
	}
	return edits
}

// withFile is opts with data standing in for file.
func withFile(opts resolve.LoadOptions, file string, data []byte) resolve.LoadOptions {
	overlay := map[string][]byte{}
	maps.Copy(overlay, opts.Overlay)
	overlay[file] = data
	opts.Overlay = overlay
	return opts
}

// Plan edits the target file in memory and checks, with the resolver that
// answers asks, that the new rule is what decides facts. Where pi's ordering
// (a later pattern, a higher scope, an integer-like key sorted first, the
// fail-closed floor) leaves the decision to another rule, Plan refuses and
// says which rule decides instead.
func Plan(opts resolve.LoadOptions, t Target, r Rule, facts resolve.Query) (*Change, error) {
	old, existed, err := Read(resolve.LoadOptions{}, t.File)
	if err != nil {
		return nil, err
	}
	// A link to a missing file reads as no file, but the rename would
	// replace the link.
	if fi, err := os.Lstat(t.File); !existed && err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a link to a missing file; create its target (or remove the link) first", t.File)
	}
	// A read-only file is one its owner said not to change; a rename over it
	// would change it anyway.
	if fi, err := os.Stat(t.File); err == nil && fi.Mode().Perm()&0o200 == 0 {
		return nil, fmt.Errorf("%s is read-only (mode %04o); make it writable to add rules to it", t.File, fi.Mode().Perm())
	}
	real, err := realFile(t.File)
	if err != nil {
		return nil, err
	}
	if err := checkRealFile(opts, t, real); err != nil {
		return nil, err
	}
	if existed {
		// The text as read stands in for the file in every load of this
		// plan: the diff and every verdict judge the same bytes, read once.
		opts = withFile(opts, t.File, old)
	}
	cur := resolve.Load(opts)
	for _, pr := range cur.Problems() {
		if pr.File == t.File {
			return nil, fmt.Errorf("pi already rejects %s as it is: %s; fix it first", t.File, pr.Message)
		}
	}
	// While any file is broken serve holds every allow at ask, so the
	// authority diff would see no allow it opens until the file is fixed.
	if prs := cur.Problems(); len(prs) > 0 {
		return nil, fmt.Errorf("%s cannot be used as it is (%s): until it is fixed permtui cannot tell what a rule would loosen; fix it first", prs[0].File, prs[0].Message)
	}
	next, err := Edit(t, r, old, existed)
	if err != nil {
		return nil, err
	}
	ch := &Change{Target: t, Real: real, Rule: r, Facts: facts, Old: old, New: next, Existed: existed, Current: cur}
	after := resolve.Load(withFile(opts, t.File, next))
	ch.Edited = after
	for _, pr := range after.Problems() {
		if pr.File == t.File {
			return nil, fmt.Errorf("pi would reject %s after the edit: %s", t.File, pr.Message)
		}
	}
	if err := decides(after.Evaluate(facts, nil), t, r, facts); err != nil {
		return nil, err
	}
	loosens, err := Loosenings(cur, after, facts)
	if err != nil {
		return nil, err
	}
	ch.Loosens = Unnamed(loosens, t.File, r)
	return ch, nil
}

// Edit returns the target file's text with r added; text is the file as it
// is (existed false: no file yet). It checks nothing about what the rule
// decides: Plan does, and simulate wants the bare edit.
func Edit(t Target, r Rule, text []byte, existed bool) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var next []byte
	var err error
	if t.Scope == ScopeAgent { // the agent file's frontmatter, else a JSONC config
		var s string
		s, err = editFrontmatter(string(text), r)
		next = []byte(s)
	} else {
		if !existed {
			text = []byte(newConfig)
		}
		next, err = editConfig(text, r)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.File, err)
	}
	return next, nil
}

// Read returns a policy file's text as the resolver reads it
// (resolve.LoadOptions.ReadFile: from the overlay when it holds the file, an
// earlier edit of the same candidate, else the disk); a missing file reads
// as empty, existed false.
func Read(opts resolve.LoadOptions, file string) (data []byte, existed bool, err error) {
	data, err = opts.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", file, err)
	}
	return data, true, nil
}

// decides reports why v was not decided by rule r written to t, or nil.
func decides(v resolve.Verdict, t Target, r Rule, facts resolve.Query) error {
	got := v.Rule
	if !isRule(got, t.File, r) {
		hint := ""
		_, sortedFirst := resolve.ArrayIndex(r.Pattern)
		switch {
		case sortedFirst:
			hint = fmt.Sprintf(" (pi sorts an integer-like key such as %q before every other key of its map, so any later pattern that matches wins over it)", r.Pattern)
		case got != nil && rank(got.Origin) > rank(t.Origin):
			hint = fmt.Sprintf(" (a %s rule, higher in pi's precedence, decides; write the rule at that scope or change that rule)", got.Origin)
		}
		return fmt.Errorf("under pi's ordering the new rule would not decide %s: %s%s", describeFacts(facts), v.Explanation, hint)
	}
	if got.FailClosed {
		return fmt.Errorf("the new rule would decide, but the fail-closed floor holds every allow at ask: %s", v.Explanation)
	}
	// A child's floor (or another asking unit) keeps an allow at ask.
	if v.Action != r.Action && v.Origin != resolve.OriginYolo {
		return fmt.Errorf("the new rule matches %s, but the answer would still be %s: %s", describeFacts(facts), v.Action, v.Explanation)
	}
	return nil
}

func describeFacts(q resolve.Query) string {
	s := fmt.Sprintf("%s %q", q.Surface, q.Values)
	if q.Agent != "" {
		s += " for agent " + q.Agent
	}
	return s
}

// scopes are the rule scopes, lowest precedence first (ruleset-semantics §4.1).
var scopes = []string{resolve.OriginGlobal, resolve.OriginProject, resolve.OriginAgent, resolve.OriginProjectAgent}

// rank orders the scopes by precedence; 0 for any other origin.
func rank(origin string) int { return slices.Index(scopes, origin) + 1 }
