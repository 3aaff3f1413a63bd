package ui

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// choiceWords says what a person chose, for the log: the scope of a session
// approval with what it records, or a session deny; the response tells the
// rest.
func choiceWords(d serve.Decision, a serve.Ask) string {
	if d.DenyFor != nil {
		return "session deny " + grantText(*d.DenyFor) + " recorded"
	}
	o, ok := a.Scopes.Find(d.Scope)
	if !ok {
		return ""
	}
	if d.Grants != nil { // the person's edit is what was recorded
		o.Grants = d.Grants
	}
	return "for " + o.Title + "; " + scopeEffect(o)
}

// decisionWords names what a person chose, for a line that lists it.
func decisionWords(d serve.Decision, a serve.Ask) string {
	switch {
	case d.DenyFor != nil:
		return choiceWords(d, a)
	case d.Scope != "":
		return "approve " + choiceWords(d, a)
	case d.State == wire.StateApproved:
		return "approve once"
	case d.State == wire.StateDeniedWithReason:
		return "deny with the reason " + strconv.Quote(termsafe.Clip(d.Reason, nameBytes))
	}
	return "deny"
}

// scopeDialog is "approve for session": the scopes serve offers for one
// ask, shown as serve words them; it returns the chosen kind.
type scopeDialog struct {
	*common
	ask    serve.AskID
	scopes serve.Scopes
	chosen int
	// armed: enter was pressed once on a choice that reaches beyond the ask
	// (an edit wider than the suggestion, or a suggestion serve names
	// wider); the next enter records it.
	armed bool
	// edited is the person's pattern for the chosen whole-session scope's
	// grant (e), or "" for the suggestion; input edits it.
	edited  string
	editing bool
	input   textinput.Model
	// overHub: the policy is on the relay's host; scopes a relay sent
	// without its reach (NoPolicy) do not name the deny rules a grant
	// passes (decisions 0189, 0246).
	overHub bool
	// editReach judges an edit as serve will (decision 0259); nil where
	// the policy is not held here (a hub console).
	editReach editReacher
	// offset scrolls the marked option's lines; seen are those of them
	// (from its first) that were on screen, span how many it has and page
	// how many the body shows: a choice with grants is recorded only once
	// every line of it was seen (decisions 0215, 0229).
	offset, span, page int
	seen               map[int]bool
}

// editReacher is a Backend (*serve.Server) that holds the policy and so
// judges a person's edit of a whole-session grant (serve.EditedReach).
type editReacher interface {
	EditReach(serve.AskID, serve.ScopeKind, []wire.Grant) ([]serve.Reach, bool)
}

func newScopeDialog(c *common, overHub bool, b Backend) scopeDialog {
	er, _ := b.(editReacher)
	return scopeDialog{common: c, overHub: overHub, editReach: er, input: newInput("pattern: ", 1000)}
}

func (d *scopeDialog) open(e *entry) {
	d.ask, d.scopes, d.editing = e.ask.ID, e.ask.Scopes, false
	d.choose(0)
}

// rescoped takes the scopes serve judged again after a policy reload: the
// ask's detail names the current reach, and a dialog open on it starts over
// on them, so what enter records is judged as shown (decision 0229).
func (m *Model) rescoped(ev serve.ScopesChanged) {
	e := m.find(ev.Ask)
	if e == nil {
		return
	}
	e.ask.Scopes = ev.Scopes
	e.same = identity(e.ask) // the scopes offered are part of the question
	if m.mode != modeScope || m.scope.ask != ev.Ask {
		return
	}
	if len(ev.Scopes.Options) == 0 {
		m.closeOverlay("the policy changed: no session choice is offered for this ask now")
		return
	}
	// The same kind stays marked: by place, a choice dropped would leave
	// the mark on the next, maybe wider one (a whole-session grant).
	kind := m.scope.scopes.Options[m.scope.chosen].Kind
	m.scope.open(e)
	if i := slices.IndexFunc(ev.Scopes.Options, func(o serve.Scope) bool { return o.Kind == kind }); i >= 0 {
		m.scope.choose(i)
	}
	m.setStatus("the policy changed: the session choices were judged again; read them again before enter")
}

// choose marks option i, which has not been on screen yet.
func (d *scopeDialog) choose(i int) {
	d.chosen, d.edited, d.armed, d.offset, d.seen = i, "", false, 0, map[int]bool{}
}

// editable: a whole-session scope with one grant, which permtui records
// and so can record as the person narrows it. The child records its own
// grants for "this subagent".
func (d *scopeDialog) editable() bool {
	return d.wholeSession() && len(d.scopes.Options[d.chosen].Grants) == 1
}

// grants are what the chosen scope records: the offer, or the edit.
func (d *scopeDialog) grants() []wire.Grant {
	o := d.scopes.Options[d.chosen]
	pattern := d.pattern()
	if pattern == "" || !d.editable() {
		return o.Grants
	}
	return []wire.Grant{{Surface: o.Grants[0].Surface, Pattern: pattern}}
}

// updateEdit takes a key while the pattern is being edited: esc goes back
// to the suggestion, enter keeps the edit; either changes the choice's
// lines, so the seen-whole count starts again.
func (d *scopeDialog) updateEdit(k tea.KeyMsg) (action, tea.Cmd) {
	switch {
	case key.Matches(k, d.keys.Close): // back to the suggestion
		d.editing, d.edited = false, ""
	case key.Matches(k, d.keys.Confirm):
		d.editing = false
		if d.edited = strings.TrimSpace(d.input.Value()); d.edited == d.suggested() {
			d.edited = ""
		}
	default:
		return nil, typeInto(&d.input, k)
	}
	d.offset, d.seen = 0, map[int]bool{}
	d.input.Blur()
	return nil, nil
}

// pattern is the edit on screen: the one being typed, so what it covers
// and whether it widens show as it is typed, or the last one kept; "" for
// none.
func (d *scopeDialog) pattern() string {
	if !d.editing {
		return d.edited
	}
	if p := strings.TrimSpace(d.input.Value()); p != d.suggested() {
		return p
	}
	return ""
}

func (d *scopeDialog) update(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	if d.editing || !key.Matches(k, d.keys.Confirm) {
		// The second enter confirms what was named just before it.
		d.armed = false
	}
	if d.editing {
		return d.updateEdit(k)
	}
	switch {
	case key.Matches(k, d.keys.Close):
		return closeAction{"nothing decided"}, nil
	// At the ends there is no other choice to mark: the marked one, its
	// edit and the lines of it seen stay as they are.
	case key.Matches(k, d.keys.Up):
		if d.chosen > 0 {
			d.choose(d.chosen - 1)
		}
	case key.Matches(k, d.keys.Down):
		if d.chosen < len(d.scopes.Options)-1 {
			d.choose(d.chosen + 1)
		}
	case key.Matches(k, d.keys.PageDown):
		d.offset = min(d.offset+max(d.page-4, 1), max(d.span-1, 0))
	case key.Matches(k, d.keys.PageUp):
		d.offset = max(d.offset-max(d.page-4, 1), 0)
	case key.Matches(k, d.keys.Edit) && d.editable():
		d.editing = true
		d.input.SetValue(d.grants()[0].Pattern)
		d.input.CursorEnd()
		return nil, d.input.Focus()
	case key.Matches(k, d.keys.Confirm):
		o := d.scopes.Options[d.chosen]
		dec := serve.Decision{Scope: o.Kind, ScopesRev: d.scopes.Rev}
		what := "approve for " + o.Title
		switch cov := d.coverage(); {
		case len(o.Grants) > 0 && !d.seenWhole():
			return statusAction{"not every line of this choice was on screen: pgdown shows the rest (recording waits until each line was shown)"}, nil
		case d.wholeSession() && !cov.ask && d.edited != "":
			return statusAction{"the edited pattern does not cover this ask; e edits it, esc restores the suggestion"}, nil
		case d.wholeSession() && !cov.ask:
			return statusAction{"the marked choice does not cover this ask: enter is refused"}, nil
		}
		wider, approx := d.reach()
		if d.edited != "" {
			dec.Grants, dec.EditDenies = d.grants(), serve.ShownDenies(wider)
			what += " with " + blanked(d.edited)
		}
		if !d.armed {
			var named []string
			if d.widens() {
				named = append(named, "the edited pattern is wider than the child's suggestion "+blanked(d.suggested()))
			}
			if len(wider) > 0 {
				whom := "for this subagent"
				if d.wholeSession() {
					whom = "for every agent of the session"
				}
				named = append(named, "the grants reach beyond this ask "+whom+" ("+reachesText(wider, approx)+")")
			}
			switch {
			case d.widens():
				d.armed = true
				return statusAction{strings.Join(named, "; ") + ": enter again records it for the whole session; e edits it, esc restores the suggestion"}, nil
			case len(named) > 0:
				d.armed = true
				return statusAction{named[0] + ": enter again records them; esc cancels"}, nil
			}
		}
		act := decideAction{pressed: k.String(), what: what, targets: []serve.AskID{d.ask}, d: dec}
		for _, o := range d.coverage().others {
			act.also = append(act.also, o.ask.ID)
		}
		return act, nil
	}
	return nil, nil
}

// suggested is the chosen whole-session option's own pattern.
func (d *scopeDialog) suggested() string { return d.scopes.Options[d.chosen].Grants[0].Pattern }

// widens: the edited pattern is not inside the child's suggestion, so the
// grant approves asks the suggestion would not (decision 0103 lets the
// person choose that, named on screen). An edit is inside the suggestion
// when the suggestion, as a pattern, matches the edit's text: "npm test *"
// matches "npm test --w*"; "*" is matched by nothing narrower.
func (d *scopeDialog) widens() bool {
	p := d.pattern()
	if p == "" {
		return false
	}
	pat := resolve.CompilePattern(d.suggested(), "")
	return !pat.Match(p)
}

// reach is what serve found the chosen scope's grants reach beyond the
// ask. An edit serve judges too where it holds the policy (editReach);
// elsewhere the edit keeps the surface, so that reach stays, its pattern
// the dialog judges itself (coverage, widens), and it may pass those of the
// suggestion's denies it still shares a value with (one written from home
// is kept: the console does not expand it). Any other deny the edit passes
// the asking host's serve refuses (decision 0259). approximate: the reach
// is that guess, so a deny it names is one the edit may pass.
func (d *scopeDialog) reach() (reach []serve.Reach, approximate bool) {
	o := d.scopes.Options[d.chosen]
	if d.pattern() == "" || !d.editable() {
		return o.Wider, false
	}
	if d.editReach != nil {
		if reach, ok := d.editReach.EditReach(d.ask, o.Kind, d.grants()); ok {
			return reach, false
		}
	}
	edit := resolve.CompilePattern(d.pattern(), "")
	var out []serve.Reach
	for _, r := range o.Wider {
		r.Grant, r.Value = d.grants()[0], ""
		r.Denies = slices.DeleteFunc(slices.Clone(r.Denies), func(dn resolve.PassedDeny) bool {
			deny := resolve.CompilePattern(dn.Rule.Pattern, "")
			overlap, _ := edit.Overlaps(&deny)
			return !overlap && !resolve.HomeRelative(dn.Rule.Pattern)
		})
		if r.Surface != "" || len(r.Denies) > 0 {
			out = append(out, r)
		}
	}
	return out, true
}

// reachText names one grant and how it reaches beyond the ask: "path_write
// *: another surface than this ask's bash; every value; would allow what
// the deny rule … denies". An edit judged without the policy may pass its
// suggestion's denies.
func reachText(r serve.Reach, approx bool) string {
	parts := widthWords(r.Surface, r.Value)
	for _, dn := range r.Denies {
		verb := "would"
		if !dn.Sure || approx {
			verb = "may"
		}
		from := dn.Rule.Origin
		if dn.Rule.File != "" {
			from += " " + filepath.Base(dn.Rule.File)
		}
		parts = append(parts, verb+" allow what the deny rule "+Sanitize(dn.Rule.Surface)+" "+Sanitize(dn.Rule.Pattern)+" ("+Sanitize(from)+") denies")
	}
	return grantText(r.Grant) + ": " + strings.Join(parts, "; ")
}

// reachesText names every grant that reaches beyond the ask more than by
// missing it (serve puts them first) and counts the rest, naming the first
// when none is severe: a "* *" never hides behind "N more grants".
func reachesText(wider []serve.Reach, approx bool) string {
	var parts []string
	misses := 0
	for _, r := range wider {
		if r.Severe() || len(parts) == 0 {
			parts = append(parts, reachText(r, approx))
		} else {
			misses++
		}
	}
	if misses > 0 {
		parts = append(parts, "and "+plural(misses, "more grant")+" that only miss this ask")
	}
	return strings.Join(parts, "; ")
}

// reachLines name, under the chosen option's grants, each grant that
// reaches beyond the ask (reach) and who would hold it.
func (d *scopeDialog) reachLines(wider []serve.Reach, approx bool) []string {
	if len(wider) == 0 {
		return nil
	}
	head := "⚠ beyond this ask; the child records them in its own session, where it decides for itself (enter twice records them):"
	if d.wholeSession() {
		head = "⚠ beyond this ask, for every agent of the session (enter twice records them):"
	}
	lines := d.wrapped(d.styles.Warning, head, 8)
	for _, r := range wider {
		lines = append(lines, d.wrapped(d.styles.Warning, "· "+reachText(r, approx), 10)...)
	}
	return lines
}

// coverage is what the chosen grants cover: this ask, and the other
// waiting asks they would answer. The matcher is resolve's, without home
// expansion; serve checks the edit again with the policy before recording
// it.
type coverage struct {
	ask    bool
	others []*entry
	// partial are the others, chains, that grants may answer: serve
	// answers a chain only when each unit is allowed, and a unit no grant
	// covers (or one with a floor) is left to the policy.
	partial map[serve.AskID]bool
}

// coverage of a whole-session choice; other choices answer only this ask.
func (d *scopeDialog) coverage() coverage {
	if !d.wholeSession() {
		return coverage{}
	}
	return coverageOf(d.q, d.ask, d.grants(), false, d.home)
}

func (d *scopeDialog) wholeSession() bool {
	o := d.scopes.Options[d.chosen]
	return (o.Kind == serve.ScopeSession || o.Kind == serve.ScopeSessionBoth) && len(o.Grants) > 0
}

// coverageOf is what session rules written as gs cover: the ask, and the
// other waiting asks of its root session. With units (a session deny,
// decision 0104) any asking unit of a chain counts too, as serve judges a
// deny.
func coverageOf(q asks, ask serve.AskID, gs []wire.Grant, units bool, home string) coverage {
	var c coverage
	e := q.find(ask)
	if e == nil {
		return c
	}
	// Serve's matcher: a "*" surface is every surface, "~" the home. Where
	// the home is unknown (a hub's asks come from other hosts) a "~" pattern
	// is taken as any value: it may answer every other ask on its surface,
	// and is not counted on to cover this one.
	covers := func(r *wire.Request, other bool) bool {
		return slices.ContainsFunc(gs, func(g wire.Grant) bool {
			if home == "" && resolve.HomeRelative(g.Pattern) {
				if !other {
					return false
				}
				g.Pattern = "*"
			}
			if units {
				return resolve.Covers(r, g, home)
			}
			return resolve.CoversValues(r, g, home)
		})
	}
	// The ask as serve judges it: a child that sends no facts by what it shows.
	c.ask = covers(serve.AskedFacts(e.ask.Request), false)
	for _, o := range q.pending() {
		// A session rule answers only its own root session's asks.
		if o.ask.ID != ask && o.ask.Session == e.ask.Session && o.ask.Host == e.ask.Host && covers(o.ask.Request, true) {
			c.others = append(c.others, o)
			if !units && !everyUnit(o.ask.Request, func(r *wire.Request) bool { return covers(r, true) }) {
				if c.partial == nil {
					c.partial = map[serve.AskID]bool{}
				}
				c.partial[o.ask.ID] = true
			}
		}
	}
	return c
}

// everyUnit: each asking unit of a chain, judged alone as serve judges it,
// is covered and carries no floor; true for an ask without units.
func everyUnit(r *wire.Request, covered func(*wire.Request) bool) bool {
	ai := r.AccessIntent
	return ai == nil || !slices.ContainsFunc(ai.AskingUnits, func(u wire.AskingUnit) bool {
		unit := *ai
		unit.MatchValues, unit.AskingUnits = []string{u.Command}, nil
		one := *r
		one.AccessIntent = &unit
		return u.Floor != nil || !covered(&one)
	})
}

// maxNamedOthers bounds the other asks a dialog names one a line; the
// rest are counted.
const maxNamedOthers = 5

// othersLines name, under a dialog's coverage line, each other waiting ask
// the choice would also answer (clipped), saying when the filter hides it
// and when it only may (partial).
func (c *common) othersLines(others []*entry, partial map[serve.AskID]bool, indent int) []string {
	var lines []string
	for i, o := range others {
		if i == maxNamedOthers {
			lines = append(lines, strings.Repeat(" ", indent)+c.styles.Warning.Render("… and "+plural(len(others)-i, "more waiting ask")))
			break
		}
		name := endLabel(o, max(c.width-indent-4, 20))
		if partial[o.ask.ID] {
			name += " (may answer: a unit no grant covers)"
		}
		if c.q.hidden(o) {
			name += " (hidden by the filter)"
		}
		lines = append(lines, strings.Repeat(" ", indent)+c.styles.Warning.Render("· "+name))
	}
	return lines
}

func (d *scopeDialog) gone() string { return d.askGone(d.ask) }

func (d *scopeDialog) help() help.KeyMap {
	if d.editing {
		return helpLine(relabel(d.keys.Confirm, "keep"), relabel(d.keys.Close, "restore the suggestion"))
	}
	keys := []key.Binding{d.keys.Up, d.keys.Down}
	if d.span > d.page-3 { // the marked option does not fit
		keys = append(keys, d.keys.PageDown, d.keys.PageUp)
	}
	if d.editable() {
		keys = append(keys, d.keys.Edit)
	}
	return d.keys.overlayHelp(append(keys, d.keys.Confirm)...)
}

func (d *scopeDialog) view(height int) []string {
	lines, from, to := d.body()
	return d.scrolled(lines, height, min(from+d.offset, max(to-1, from)), to)
}

// noteSeen records which lines of the marked option a body of height shows
// (the root calls it after each message, as the queue notes what it shows).
func (d *scopeDialog) noteSeen(height int) {
	lines, from, to := d.body()
	first, last := window(len(lines), height, min(from+d.offset, max(to-1, from)), to)
	d.span, d.page = to-from, height
	for i := max(first, from); i < min(last, to); i++ {
		d.seen[i-from] = true
	}
}

// seenWhole: every line of the marked option was on screen.
func (d *scopeDialog) seenWhole() bool {
	for i := range d.span {
		if !d.seen[i] {
			return false
		}
	}
	return true
}

// body is the dialog's lines and the marked option's [from, to).
func (d *scopeDialog) body() (lines []string, from, to int) {
	s := d.styles
	lines, ok := d.sessionAsk(d.ask, "approve for session")
	if !ok {
		return lines, 0, 0
	}
	var marked [2]int // the marked option's first line and the line after it
	for i, o := range d.scopes.Options {
		if i == d.chosen {
			marked[0] = len(lines)
		}
		mark, style := "  ( ) ", s.Value
		if i == d.chosen {
			mark, style = "▸ (•) ", s.Strong
		}
		effect := o.Effect
		if o.Grants != nil {
			effect += ":"
		}
		if ansi.StringWidth(mark+o.Title+" — "+effect) <= d.width {
			lines = append(lines, style.Render(mark+o.Title)+s.Muted.Render(" — "+effect))
		} else {
			lines = append(lines, style.Render(mark+o.Title))
			lines = append(lines, d.wrapped(s.Muted, effect, 8)...)
		}
		grants := o.Grants
		if i == d.chosen {
			grants = d.grants()
		}
		for _, g := range grants {
			lines = append(lines, d.indented(pad(Sanitize(g.Surface), 24)+" "+blanked(g.Pattern), 8, 0)...)
		}
		if i == d.chosen {
			// Judged once a body: an edit's reach is serve's judgment under
			// the policy, made again on every message while the dialog is open.
			wider, approx := d.reach()
			lines = append(lines, d.reachLines(wider, approx)...)
			if d.wholeSession() {
				lines = append(lines, d.coverageLines(approx)...)
			}
		}
		if o.Caveat != "" {
			lines = append(lines, d.wrapped(s.Muted, o.Caveat, 8)...)
		}
		if i == d.chosen {
			marked[1] = len(lines)
		}
	}
	if d.scopes.Note != "" {
		lines = append(append(lines, ""), d.wrapped(s.Muted, d.scopes.Note, 0)...)
	}
	lines = append(lines, "", s.Muted.Render("enter approves with the marked scope; esc cancels and decides nothing"))
	return lines, marked[0], marked[1]
}

// scrolled fits a dialog's lines to height, keeping its title and the
// marked option's lines [from, to) on screen: what enter would record is
// always in view (decision 0153). Cut lines are counted above and below.
func (c *common) scrolled(lines []string, height, from, to int) []string {
	first, last := window(len(lines), height, from, to)
	if first == 0 {
		return lines
	}
	out := []string{lines[0]}
	if first > 1 {
		out = append(out, c.styles.Muted.Render("  ↑ "+plural(first-1, "more line")))
	}
	out = append(out, lines[first:last]...)
	if last < len(lines) {
		out = append(out, c.styles.Muted.Render("  ↓ "+plural(len(lines)-last, "more line")))
	}
	return out
}

// window is the lines [first, last) of n that scrolled shows below the
// title, or 0, n when all fit.
func window(n, height, from, to int) (first, last int) {
	if n <= height || height < 4 {
		return 0, n
	}
	room := height - 3 // the title and the two counts
	first = max(min(from, n-room), 1)
	if to-first > room { // a tall option: its first lines matter most
		first = from
	}
	last = min(first+room, n)
	if first == 1 { // no count above: one more line below
		last = min(last+1, n)
	}
	if last == n && first > 1 { // no count below: one more line above
		first--
	}
	return first, last
}

// sessionAsk is the head of the scope and session-deny dialogs: the title,
// the ask a whole-session choice is made on, and what the whole session
// is. Without the ask (it left the queue) it is the title alone, and !ok.
func (c *common) sessionAsk(id serve.AskID, title string) (lines []string, ok bool) {
	e := c.q.find(id)
	if e == nil {
		return []string{c.rule(title)}, false
	}
	r := e.ask.Request
	// The title names the ask, so it stays on screen when the options scroll.
	lines = []string{c.rule(title + " · " + label(e)),
		"  " + agentName(r) + " asks for " + Sanitize(serve.SurfaceOf(r)) + ":"}
	v, _ := judgedValue(e.ask)
	lines = append(lines, c.indented(blanked(v), 4, maxFactLines)...)
	return append(lines, c.styles.Muted.Render("  whole session = every subagent of root "+Sanitize(e.ask.Session)), ""), true
}

// coverageLines show the pattern being edited and what the grant covers;
// approx: the reach was not judged under the policy (reach).
func (d *scopeDialog) coverageLines(approx bool) []string {
	s := d.styles
	var lines []string
	if d.editing {
		lines = append(lines, "        "+d.input.View())
	}
	cov := d.coverage()
	text := "covers this ask"
	style := s.Muted
	if !cov.ask {
		text, style = "⚠ does not cover this ask: enter is refused", s.Warning
	}
	switch {
	case !d.editable():
	case cov.ask && d.widens():
		text, style = "⚠ wider than the child's suggestion "+blanked(d.suggested())+": it approves for the whole session asks that pattern would not, and a session grant is judged before the policy's rules, so a deny rule it shares a value with no longer denies (enter twice records it; e then esc restores the suggestion)", s.Warning
	case d.edited != "":
		text += " (edited; e then esc restores the suggestion)"
	case !d.editing:
		text += " · e narrows the pattern"
	}
	lines = append(lines, d.wrapped(style, text, 8)...)
	if approx && cov.ask && d.widens() {
		lines = append(lines, d.wrapped(s.Warning, "this pattern is not judged here against the asking host's policy: if it passes a deny rule not named here, that host refuses it and the ask is shown again", 8)...)
	}
	if d.overHub && d.scopes.NoPolicy {
		lines = append(lines, d.wrapped(s.Muted, "the policy is on the asking host: the deny rules it would pass are not named here", 8)...)
	}
	if sure := len(cov.others) - len(cov.partial); len(cov.others) > 0 {
		head := "also answers " + plural(sure, "other waiting ask")
		if len(cov.partial) > 0 {
			head += " and may answer " + itoa(len(cov.partial)) + " more"
		}
		lines = append(lines, "        "+s.Warning.Render(head+":"))
	}
	return append(lines, d.othersLines(cov.others, cov.partial, 10)...)
}

// widthWords are serve's words for how a session rule reaches beyond the
// ask (surfaces, then values), sanitized, leaving out what is not said.
func widthWords(surface, value string) []string {
	return slices.DeleteFunc([]string{Sanitize(surface), Sanitize(value)}, func(p string) bool { return p == "" })
}
