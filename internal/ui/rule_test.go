package ui

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// fakeRules answers previews with preview (its Coverage names the pattern)
// and records every draft it was asked about.
type fakeRules struct {
	mu       sync.Mutex
	preview  RulePreview
	previews []RuleDraft
	writes   []RuleDraft
	confirms []int
	digests  []string
	writeErr error
}

func (f *fakeRules) PreviewRule(d RuleDraft) RulePreview {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.previews = append(f.previews, d)
	p := f.preview
	if p.Coverage == "" {
		p.Coverage = "would have decided 3 of the last 9 recorded asks"
	}
	if p.File == "" {
		p.File = "/home/u/.pi/agent/agents/" + d.Agent + ".md"
	}
	return p
}

func (f *fakeRules) WriteRule(d RuleDraft, confirm int, digest string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, d)
	f.confirms = append(f.confirms, confirm)
	f.digests = append(f.digests, digest)
	return "rule written", f.writeErr
}

func (f *fakeRules) last() RuleDraft {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.previews[len(f.previews)-1]
}

func withRules(r RuleBackend) func(*Options) { return func(o *Options) { o.Rules = r } }

func TestRuleDialogPrefillsFromTheAsk(t *testing.T) {
	rules := &fakeRules{}
	h := newHarness(t, withRules(rules))
	a, b := pathWrite(), bashChain()
	h.queue(a, b)
	h.keys("R")
	if h.m.mode != modeRule {
		t.Fatalf("mode %d", h.m.mode)
	}
	d := rules.last()
	want := RuleDraft{Scope: "agent", Agent: "reviewer", Surface: "path_write", Pattern: "/w/p/src/*", Action: resolve.Allow,
		Facts:   resolve.QueryOf(a.Request.AccessIntent),
		Waiting: []resolve.Query{resolve.QueryOf(a.Request.AccessIntent), resolve.QueryOf(b.Request.AccessIntent)}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("draft\n%+v\nwant\n%+v", d, want)
	}
	view := h.m.View()
	for _, s := range []string{"pattern: /w/p/src/*", "this agent (reviewer)", "would have decided 3 of the last 9"} {
		if !strings.Contains(view, s) {
			t.Errorf("view lacks %q:\n%s", s, view)
		}
	}
}

func TestRuleDialogEditsScopeActionAndPattern(t *testing.T) {
	rules := &fakeRules{}
	h := newHarness(t, withRules(rules))
	h.queue(bashChain()) // suggests "git push *" for bash
	h.keys("R", "backspace", "-", "-", "f", "o", "r", "c", "e", " ", "*")
	if got := rules.last().Pattern; got != "git push --force *" {
		t.Fatalf("pattern %q", got)
	}
	h.keys("tab")
	if got := rules.last().Scope; got != "global" {
		t.Errorf("scope after tab: %q", got)
	}
	h.keys("tab", "tab")
	if got := rules.last().Scope; got != "agent" {
		t.Errorf("scope after three tabs: %q", got)
	}
	h.keys("down")
	if got := rules.last().Action; got != resolve.Ask {
		t.Errorf("action after down: %q", got)
	}
	h.keys("up", "up")
	if got := rules.last().Action; got != resolve.Deny {
		t.Errorf("action after up up: %q", got)
	}
	// j, k and y are text here: they neither move nor decide.
	h.keys("j", "k", "y")
	if got := rules.last().Pattern; got != "git push --force *jky" {
		t.Errorf("pattern %q", got)
	}
	h.wantDecisions()
}

func TestRuleDialogWritesAndCloses(t *testing.T) {
	rules := &fakeRules{preview: RulePreview{Digest: "seen"}}
	h := newHarness(t, withRules(rules))
	a := pathWrite()
	h.queue(a)
	h.keys("R", "enter")
	if len(rules.writes) != 1 || rules.writes[0].Pattern != "/w/p/src/*" || rules.confirms[0] != 0 || rules.digests[0] != "seen" {
		t.Fatalf("writes %+v %v %v", rules.writes, rules.confirms, rules.digests)
	}
	if h.m.mode != modeQueue || !strings.Contains(h.m.status, "rule written") {
		t.Errorf("mode %d, status %q", h.m.mode, h.m.status)
	}
	h.wantDecisions() // the rule answers the ask through serve's reload, not the console
	// The reload's answer follows the report within milliseconds; the status
	// counts it after the report, not in its place (decision 0285).
	h.events(serve.Decided{Ask: a, Response: wire.Response{Approved: true, State: wire.StateApproved}, Auto: true})
	h.wantStatus("rule written; 1 queued ask answered by recorded authority")
	// Once the status line said something else, a later answer is not
	// put after the report.
	b := bashChain()
	h.queue(b)
	h.keys("j")
	h.events(serve.Decided{Ask: b, Response: wire.Response{Approved: true, State: wire.StateApproved}, Auto: true})
	if strings.Contains(h.m.status, "rule written") {
		t.Errorf("a later answer brought the report back: %q", h.m.status)
	}
}

// Keys pressed while the rule is written change nothing: esc closed the
// dialog saying no rule was written, and the write's own answer, arriving
// with the dialog closed, was dropped, so the rule on disk went unnamed.
func TestRuleDialogTakesNoKeysWhileWriting(t *testing.T) {
	rules := &fakeRules{}
	h := newHarness(t, withRules(rules))
	h.queue(bashChain())
	h.keys("R", "up") // deny: written at once, no file to check first
	_, write := h.m.Update(keyMsg("enter"))
	h.keys("x", "esc")
	if h.m.mode != modeRule || strings.Contains(h.m.status, "no rule written") {
		t.Fatalf("mode %d, status %q while the rule is written", h.m.mode, h.m.status)
	}
	h.run(write)
	if len(rules.writes) != 1 || rules.writes[0].Pattern != suggestedPattern(bashChain().Request) {
		t.Fatalf("writes %+v", rules.writes)
	}
	if h.m.mode != modeQueue || !strings.Contains(h.m.status, "rule written") {
		t.Errorf("mode %d, status %q", h.m.mode, h.m.status)
	}
}

func TestRuleDialogStalePreviewIsDropped(t *testing.T) {
	rules := &fakeRules{}
	h := newHarness(t, withRules(rules))
	h.queue(pathWrite())
	h.keys("R")
	// A preview for an older draft arrives after the person typed on, before
	// the new draft's.
	old := h.m.ruleDialog.seq
	h.m.ruleDialog.refresh()
	h.send(rulePreviewMsg{seq: old, preview: rules.preview})
	h.keys("enter")
	if len(rules.writes) != 0 || !strings.Contains(h.m.status, "not ready") {
		t.Fatalf("wrote on a stale preview: %+v, status %q", rules.writes, h.m.status)
	}
}

func TestRuleDialogBroadRuleNeedsTheCount(t *testing.T) {
	rules := &fakeRules{preview: RulePreview{Broad: true, Confirm: 2, Warnings: []string{"it would allow 2 recorded asks a person denied"}}}
	h := newHarness(t, withRules(rules))
	h.queue(pathWrite())
	h.keys("R", "enter")
	if len(rules.writes) != 0 || !h.m.ruleDialog.counting || !strings.Contains(h.m.status, "type 2") {
		t.Fatalf("first enter: writes %d, counting %v, status %q", len(rules.writes), h.m.ruleDialog.counting, h.m.status)
	}
	h.keys("3", "enter")
	if len(rules.writes) != 0 {
		t.Fatal("the wrong count wrote the rule")
	}
	h.keys("backspace", "2", "enter")
	if len(rules.writes) != 1 || rules.confirms[0] != 2 {
		t.Fatalf("writes %+v confirms %v", rules.writes, rules.confirms)
	}
}

// TestRuleDialogCountEndsWhenTheWaitingAsksChange: an ask arriving while the
// count is open redoes the preview, so the count it named no longer holds.
// The status says so instead of still asking for the count, and keys go to
// the pattern field, as they do with the count closed by esc.
func TestRuleDialogCountEndsWhenTheWaitingAsksChange(t *testing.T) {
	rules := &fakeRules{preview: RulePreview{Broad: true, Confirm: 2}}
	h := newHarness(t, withRules(rules))
	h.queue(pathWrite())
	h.keys("R", "enter")
	h.wantStatus("type 2")
	h.queue(bashChain())
	if h.m.ruleDialog.counting || strings.Contains(h.m.status, "type 2") {
		t.Fatalf("after an ask arrived: counting %v, status %q", h.m.ruleDialog.counting, h.m.status)
	}
	h.wantStatus("the preview is redone")
	h.keys("x")
	if got := rules.last().Pattern; !strings.HasSuffix(got, "x") {
		t.Fatalf("a key after the count ended did not reach the pattern: %q", got)
	}
}

func TestRuleDialogRefusalAndErrorsWriteNothing(t *testing.T) {
	rules := &fakeRules{preview: RulePreview{Refused: "under pi's ordering the new rule would not decide"}}
	h := newHarness(t, withRules(rules))
	h.queue(pathWrite())
	h.keys("R", "enter")
	if len(rules.writes) != 0 || !strings.Contains(h.m.status, "cannot write") || h.m.mode != modeRule {
		t.Fatalf("refused: writes %d, status %q", len(rules.writes), h.m.status)
	}
	rules.preview.Refused = ""
	rules.writeErr = errors.New("disk full")
	h.keys("tab", "enter")
	if h.m.mode != modeRule || !strings.Contains(h.m.status, "rule not written: disk full") {
		t.Errorf("write error: mode %d, status %q", h.m.mode, h.m.status)
	}
}

func TestRuleKeyNeedsFactsAndABackend(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	h.keys("R")
	if h.m.mode != modeQueue || !strings.Contains(h.m.status, "cannot be written") {
		t.Errorf("no backend: mode %d, status %q", h.m.mode, h.m.status)
	}
	rules := &fakeRules{}
	h = newHarness(t, withRules(rules))
	h.queue(legacyBash())
	h.keys("R")
	if h.m.mode != modeQueue || !strings.Contains(h.m.status, "no facts") || len(rules.previews) != 0 {
		t.Errorf("no facts: mode %d, status %q", h.m.mode, h.m.status)
	}
}

// TestRuleDialogShowsNoHiddenRunes: the pattern field is prefilled from the
// child's suggestion, which may hold bidi overrides or zero-width runes that
// make a terminal show another pattern than the one written. The dialog
// falls back to the exact value, shows no such rune, and one pasted in is
// shown as a stand-in, spelled once.
func TestRuleDialogShowsNoHiddenRunes(t *testing.T) {
	rules := &fakeRules{}
	h := newHarness(t, withRules(rules))
	a := pathWrite()
	a.Request.SessionApproval.Grants[0].Pattern = "/w/p/src/\u202e*"
	h.queue(a)
	h.keys("R")
	if got := rules.last().Pattern; got != "/w/p/src/app.ts" {
		t.Errorf("prefilled %q, want the exact value", got)
	}
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("\u202e*"), Paste: true})
	view := h.m.View()
	if strings.ContainsFunc(view, termsafe.Hidden) {
		t.Errorf("view holds a hidden rune: %q", view)
	}
	if got := rules.last().Pattern; strings.ContainsFunc(got, termsafe.Hidden) {
		t.Errorf("draft pattern %q holds a hidden rune", got)
	}
	// What the field shows stays as it is while the person types on
	// (decision 0253: the stand-in is not spelled again).
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")})
	if got := rules.last().Pattern; got != "/w/p/src/app.ts⟨U+202E⟩*x" {
		t.Errorf("draft pattern %q, want the override spelled once", got)
	}
}

// TestRuleDialogBroadRuleWithCountZero: a "*" rule on a fresh audit log
// names 0 asks; it still needs the second confirmation (typing 0), and the
// status says what 0 is: no recorded ask it would have decided.
func TestRuleDialogBroadRuleWithCountZero(t *testing.T) {
	rules := &fakeRules{preview: RulePreview{Broad: true, Warnings: []string{`the pattern "*" matches every value of path_write: it would have decided 0 recorded asks`}}}
	h := newHarness(t, withRules(rules))
	h.queue(pathWrite())
	h.keys("R", "enter")
	if len(rules.writes) != 0 || !h.m.ruleDialog.counting || !strings.Contains(h.m.status, "type 0") {
		t.Fatalf("first enter: writes %d, counting %v, status %q", len(rules.writes), h.m.ruleDialog.counting, h.m.status)
	}
	h.wantStatus("it would have decided no recorded ask")
	h.keys("enter")
	if len(rules.writes) != 0 {
		t.Fatal("an empty count wrote the rule")
	}
	h.wantStatus("it would have decided no recorded ask")
	h.keys("0", "enter")
	if len(rules.writes) != 1 || rules.confirms[0] != 0 {
		t.Fatalf("writes %+v confirms %v", rules.writes, rules.confirms)
	}
}

// TestRuleKeyIsOfferedOnlyWhereRulesCanBeWritten: over a hub the policy is on
// the relays' hosts, so R says so and the help leaves it out; a console with
// a rule backend offers it.
func TestRuleKeyIsOfferedOnlyWhereRulesCanBeWritten(t *testing.T) {
	hub := newHarness(t, func(o *Options) { o.OverHub = true })
	hub.queue(bashChain())
	hub.keys("?")
	if strings.Contains(hub.m.View(), "make a rule") {
		t.Errorf("a hub console's help offers R:\n%s", hub.m.View())
	}
	hub.keys("?", "R")
	if hub.m.mode == modeRule {
		t.Fatal("R opened the rule dialog without a rule backend")
	}
	hub.wantStatus("the policy is on each relay's host")

	local := newHarness(t, withRules(&fakeRules{}))
	local.queue(bashChain())
	local.keys("?")
	if !strings.Contains(local.m.View(), "make a rule") {
		t.Errorf("a console with rules does not offer R:\n%s", local.m.View())
	}
}
