package ui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// RuleBackend previews and writes the rules of the R dialog in pi's policy
// files. Both calls do IO; the console makes them only inside tea.Cmds.
type RuleBackend interface {
	// PreviewRule plans the rule and measures what it would decide.
	PreviewRule(RuleDraft) RulePreview
	// WriteRule writes it as 'permtui rule add' does; confirm is the count
	// a broad rule's second confirmation named (0 when none was asked), and
	// digest the preview's, so that a policy changed since is refused. It
	// returns what to tell the person.
	WriteRule(d RuleDraft, confirm int, digest string) (string, error)
}

// RuleDraft is a rule as the dialog has it, with the facts it is for.
type RuleDraft struct {
	Scope   string // agent (this agent), global (all agents), project
	Agent   string // principal.agentName of the ask
	Surface string
	Pattern string
	Action  resolve.Action
	Facts   resolve.Query   // the ask's facts: the rule must decide them
	Waiting []resolve.Query // the facts of every ask waiting in the queue
}

// RulePreview is what the dialog shows for a draft.
type RulePreview struct {
	File     string
	Diff     string   // unified diff of the policy file
	Coverage string   // e.g. "would have decided 37 of the last 412 recorded asks; 2 of them a person denied"
	Denied   []string // the recorded asks a person denied that it would decide, one line each
	Waiting  []int    // of RuleDraft.Waiting, the asks it would decide
	Warnings []string
	Broad    bool // a second confirmation must name Confirm (which may be 0)
	Confirm  int
	Digest   string // what the preview named, for WriteRule to check it still holds
	Refused  string // why it cannot be written; "" when it can
}

type (
	// previewRuleAction asks the root for a preview of draft, numbered seq,
	// and puts note, if any, on the status line.
	previewRuleAction struct {
		seq   int
		draft RuleDraft
		note  string
	}
	// writeRuleAction asks the root to write draft.
	writeRuleAction struct {
		draft   RuleDraft
		confirm int
		digest  string
		decides []serve.AskID // the waiting asks it would decide
	}
	rulePreviewMsg struct {
		seq     int
		preview RulePreview
	}
	ruleWrittenMsg struct {
		status string
		err    error
	}
	// wroteRuleAction closes the dialog with the write's report.
	wroteRuleAction struct{ report string }
)

func (previewRuleAction) isAction() {}
func (writeRuleAction) isAction()   {}
func (wroteRuleAction) isAction()   {}

// ruleScopes are the dialog's scopes, in the order tab visits them.
var ruleScopes = []struct{ scope, title string }{
	{"agent", "this agent"},
	{"global", "all agents"},
	{"project", "project"},
}

var ruleActions = []resolve.Action{resolve.Allow, resolve.Ask, resolve.Deny}

// ruleDialog is R: a rule for pi's policy, prefilled from one ask, with an
// editable pattern, a live preview (coverage and diff) and, for a broad
// rule, a second confirmation that names the count.
type ruleDialog struct {
	*common
	ask      serve.AskID   // the ask it was opened on
	waiting  []serve.AskID // the asks of base.Waiting, in its order
	pattern  textinput.Model
	count    textinput.Model
	counting bool // the second confirmation is open
	title    string
	base     RuleDraft // surface, agent, facts
	scope    int
	action   int
	seq      int          // of the latest preview asked for
	preview  *RulePreview // of the draft as it is; nil until it arrives
	writing  bool
}

func newRuleDialog(c *common) ruleDialog {
	return ruleDialog{common: c, pattern: newInput("pattern: ", 1000), count: newInput("count: ", 1000)}
}

func (d *ruleDialog) resize() { d.pattern.Width = max(d.width-len(d.pattern.Prompt)-2, 10) }

// open prefills the dialog from an ask: its surface, the child's suggested
// pattern for that surface or else the exact value, allow, this agent.
func (d *ruleDialog) open(e *entry, waiting []*entry) action {
	in := e.ask.Request.AccessIntent
	d.resize()
	d.title, d.ask = label(e), e.ask.ID
	d.base = RuleDraft{Agent: in.Principal.AgentName, Surface: in.Surface, Facts: resolve.QueryOf(in)}
	d.takeWaiting(waiting)
	d.scope, d.action, d.counting, d.writing, d.preview = 0, 0, false, false, nil
	if d.base.Agent == "" {
		d.scope = 1 // no agent scope to write to
	}
	d.pattern.SetValue(suggestedPattern(e.ask.Request))
	d.pattern.CursorEnd()
	d.pattern.Focus()
	d.count.Blur()
	return d.refresh()
}

func (d *ruleDialog) takeWaiting(waiting []*entry) {
	d.waiting, d.base.Waiting = nil, nil
	for _, w := range waiting {
		d.waiting = append(d.waiting, w.ask.ID)
		d.base.Waiting = append(d.base.Waiting, resolve.QueryOf(w.ask.Request.AccessIntent))
	}
}

// setWaiting takes the waiting asks as they are now; when they changed (an
// ask arrived or left) the preview is asked for again, and until it is
// shown enter writes nothing ("the preview is not ready yet"), so a rule is
// never written on a count of asks the screen did not name. An open count
// ends with the preview it was asked for, and the status says so rather
// than still asking for it.
func (d *ruleDialog) setWaiting(waiting []*entry) action {
	if d.writing || slices.EqualFunc(d.waiting, waiting, func(id serve.AskID, e *entry) bool { return id == e.ask.ID }) {
		return nil
	}
	counting := d.counting
	d.takeWaiting(waiting)
	a := d.refresh()
	if counting {
		a.note = "the waiting asks changed, so the preview is redone and its count with it: look at it, then press enter"
	}
	return a
}

// suggestedPattern is the child's suggested pattern for the ask's surface,
// else its first match value. Text a terminal cannot show as it is (a bidi
// override, a zero-width rune: the field would show another pattern than
// the one written) is passed over, and shown as stand-ins when nothing else
// is left, for the preview to refuse.
func suggestedPattern(r *wire.Request) string {
	in := r.AccessIntent
	var options []string
	if r.SessionApproval != nil {
		gs := r.SessionApproval.Grants
		if i := slices.IndexFunc(gs, func(g wire.Grant) bool { return g.Surface == in.Surface }); i >= 0 {
			options = append(options, gs[i].Pattern)
		}
	}
	if len(in.MatchValues) > 0 {
		options = append(options, in.MatchValues[0])
	}
	if i := slices.IndexFunc(options, func(o string) bool { return Sanitize(o) == o }); i >= 0 {
		return options[i]
	}
	if len(options) > 0 {
		return Sanitize(options[len(options)-1])
	}
	return "*"
}

func (d *ruleDialog) draft() RuleDraft {
	dr := d.base
	dr.Scope = ruleScopes[d.scope].scope
	dr.Pattern = d.pattern.Value()
	dr.Action = ruleActions[d.action]
	return dr
}

// refresh asks for a preview of the draft as it is now; the one shown no
// longer holds, nor a count it named, and older previews are dropped when
// they arrive.
func (d *ruleDialog) refresh() previewRuleAction {
	d.seq++
	d.preview = nil
	if d.counting {
		d.closeCount() // no key is pending to blink the cursor for
	}
	return previewRuleAction{seq: d.seq, draft: d.draft()}
}

// closeCount goes back from the count to the pattern field.
func (d *ruleDialog) closeCount() tea.Cmd {
	d.counting = false
	d.count.Blur()
	return d.pattern.Focus()
}

func (d *ruleDialog) update(msg tea.Msg) (action, tea.Cmd) {
	switch msg := msg.(type) {
	case rulePreviewMsg:
		if msg.seq == d.seq {
			p := msg.preview
			d.preview = &p
		}
		return nil, nil
	case ruleWrittenMsg:
		d.writing = false
		if msg.err != nil {
			return statusAction{"rule not written: " + Sanitize(msg.err.Error())}, nil
		}
		return wroteRuleAction{msg.status}, nil
	case tea.KeyMsg:
		switch {
		case d.writing: // its answer closes the dialog and names what was written
			return statusAction{"writing the rule…"}, nil
		case key.Matches(msg, d.keys.Close):
			if d.counting {
				return nil, d.closeCount()
			}
			return closeAction{"no rule written"}, nil
		case key.Matches(msg, d.keys.Confirm):
			return d.confirm(), nil
		case d.counting:
		case key.Matches(msg, d.keys.RuleScope):
			d.scope = (d.scope + 1) % len(ruleScopes)
			if d.base.Agent == "" && d.scope == 0 {
				d.scope = 1
			}
			return d.refresh(), nil
		case key.Matches(msg, d.keys.RuleAction):
			step := 1
			if msg.String() == "up" {
				step = len(ruleActions) - 1
			}
			d.action = (d.action + step) % len(ruleActions)
			return d.refresh(), nil
		}
	}
	if d.counting {
		return nil, typeInto(&d.count, msg)
	}
	before := d.pattern.Value()
	cmd := typeInto(&d.pattern, msg)
	if d.pattern.Value() != before {
		return d.refresh(), cmd
	}
	return nil, cmd
}

// confirm is enter: write, or open the second confirmation of a broad rule.
func (d *ruleDialog) confirm() action {
	p := d.preview
	switch {
	case p == nil:
		return statusAction{"the preview is not ready yet; look at it, then press enter"}
	case p.Refused != "":
		return statusAction{"cannot write this rule: " + Sanitize(p.Refused)}
	case p.Broad && !d.counting:
		d.counting = true
		d.count.Reset()
		d.pattern.Blur()
		d.count.Focus()
		return statusAction{askCount(p.Confirm)}
	case d.counting && strings.TrimSpace(d.count.Value()) != strconv.Itoa(p.Confirm):
		return statusAction{askCount(p.Confirm)}
	}
	d.writing = true
	return writeRuleAction{draft: d.draft(), confirm: p.Confirm, digest: p.Digest, decides: d.decides()}
}

// askCount asks for the count of a broad rule. A count of 0 (a "*" rule
// with nothing recorded that it would have decided) still gates the write
// (decision 0116) and says what typing 0 confirms (decision 0295).
func askCount(n int) string {
	if n == 0 {
		return "this rule is broad and it would have decided no recorded ask: type 0 and enter to write it anyway; esc goes back"
	}
	return "this rule is broad: type " + strconv.Itoa(n) + " and enter to write it; esc goes back"
}

// decides are the waiting asks the previewed rule would decide.
func (d *ruleDialog) decides() []serve.AskID {
	var ids []serve.AskID
	if d.preview != nil {
		for _, i := range d.preview.Waiting {
			if i >= 0 && i < len(d.waiting) {
				ids = append(ids, d.waiting[i])
			}
		}
	}
	return ids
}

// gone is never: the dialog holds the ask's facts, and the ask being
// answered (often by the rule just written) does not end it.
func (d *ruleDialog) gone() string { return "" }

func (d *ruleDialog) help() help.KeyMap {
	if d.counting {
		return d.keys.overlayHelp(relabel(d.keys.Confirm, "write"))
	}
	return d.keys.overlayHelp(relabel(d.keys.Confirm, "write"), d.keys.RuleScope, d.keys.RuleAction)
}

func (d *ruleDialog) view(height int) []string {
	s := d.styles
	dr := d.draft()
	scope := ruleScopes[d.scope].title
	if dr.Scope == "agent" {
		scope += " (" + Sanitize(dr.Agent) + ")"
	}
	lines := []string{
		d.rule("rule from " + d.title),
		d.pattern.View(),
	}
	fields := []field{
		{label: "surface", text: Sanitize(dr.Surface)},
		{label: "action", text: string(dr.Action)},
		{label: "scope", text: scope},
	}
	p := d.preview
	switch {
	case p == nil:
		fields = append(fields, field{label: "preview", text: "…", kind: kindMuted})
	case p.Refused != "":
		fields = append(fields, field{label: "file", text: Sanitize(p.File)},
			field{label: "refused", text: Sanitize(p.Refused), kind: kindWarning})
	default:
		fields = append(fields, field{label: "file", text: Sanitize(p.File)},
			field{label: "covers", text: Sanitize(p.Coverage)},
			field{label: "waiting", text: plural(len(p.Waiting), "waiting ask") + " it would decide now"})
		for _, den := range p.Denied {
			fields = append(fields, field{label: "denied", text: Sanitize(den), kind: kindWarning})
		}
		for _, w := range p.Warnings {
			fields = append(fields, field{label: "warning", text: Sanitize(w), kind: kindWarning})
		}
	}
	lines = append(lines, d.renderFields(fields, true, 2)...)
	var others []*entry
	for _, id := range d.decides() {
		if o := d.q.find(id); o != nil && id != d.ask {
			others = append(others, o)
		}
	}
	lines = append(lines, d.othersLines(others, nil, labelWidth+1)...)
	if d.counting {
		lines = append(lines, d.count.View())
	}
	lines = append(lines, s.Muted.Render("enter writes it to pi's policy; esc closes and writes nothing"))
	if p != nil && p.Diff != "" {
		lines = append(lines, d.rule("diff"))
		for _, l := range strings.Split(strings.TrimSuffix(p.Diff, "\n"), "\n") {
			if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
				continue
			}
			lines = append(lines, truncate(Sanitize(l), d.width))
		}
	}
	return fitLines(lines, height)
}
