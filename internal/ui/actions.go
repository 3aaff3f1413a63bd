package ui

import (
	"cmp"
	"slices"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// handleKey routes a key press to the open overlay, else the queue.
func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) {
		return m.quit(true)
	}
	if o := m.active(); o != nil {
		return m.overlayMsg(o, msg)
	}
	if m.filtering {
		return m.filterKey(msg)
	}
	return m.queueKey(msg)
}

// filterKey edits the filter as it is typed; enter keeps it, esc clears it.
func (m *Model) filterKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Close):
		m.filtering = false
		m.setFilter("")
	case key.Matches(msg, m.keys.Confirm):
		m.filtering = false
	default:
		var cmd tea.Cmd
		m.filterInput, cmd = m.filterInput.Update(msg)
		m.setFilter(m.filterInput.Value())
		return cmd
	}
	m.filterInput.Blur()
	return nil
}

func (m *Model) setFilter(f string) {
	m.filter = f
	m.queueChanged()
	m.keepHighlightShown()
}

// queueKey acts on a key pressed over the queue.
func (m *Model) queueKey(msg tea.KeyMsg) tea.Cmd {
	if m.keyIgnored(msg) {
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Close) && m.help.ShowAll:
		m.help.ShowAll = false
	case key.Matches(msg, m.keys.Close) && m.selectedCount() > 0:
		m.clearSelection()
	case key.Matches(msg, m.keys.Close) && m.filter != "":
		m.setFilter("")
	case key.Matches(msg, m.keys.Filter):
		m.filtering = true
		m.filterInput.SetValue(m.filter)
		m.filterInput.CursorEnd()
		return m.filterInput.Focus()
	case key.Matches(msg, m.keys.Group):
		m.grouped = !m.grouped
		m.queueChanged()
	case key.Matches(msg, m.keys.Up):
		m.move(-1)
	case key.Matches(msg, m.keys.Down):
		m.move(1)
	case key.Matches(msg, m.keys.Top):
		m.move(-len(m.queue))
	case key.Matches(msg, m.keys.Bottom):
		m.move(len(m.queue))
	case key.Matches(msg, m.keys.Select):
		m.toggleSelect()
	case key.Matches(msg, m.keys.ApproveOnce):
		return m.decideTargets(msg.String(), "approve once", m.targets(), once, m.opts.ConfirmDouble, nil)
	case key.Matches(msg, m.keys.Deny):
		return m.decideTargets(msg.String(), "deny", m.targets(), deny, m.opts.ConfirmDouble, nil)
	case key.Matches(msg, m.keys.ApproveIdentical):
		// Always two presses: the first says how many, marks which, and
		// names what they share and what near-identical asks differ in.
		t, what := m.identicalTargets()
		return m.decideTargets(msg.String(), what, t, once, true, nil)
	case key.Matches(msg, m.keys.ApproveSession):
		if e := m.answerable(); e != nil {
			m.openScope(e)
		}
	case key.Matches(msg, m.keys.DenyReason):
		return m.openReason(m.targets())
	case key.Matches(msg, m.keys.DenySession):
		return m.openDenySession()
	case key.Matches(msg, m.keys.View):
		m.openPager(modeView)
		if n := len(m.selectedShown()); n > 0 && m.mode == modeView {
			// The full view decides on the ask it shows (pager.update).
			m.setStatus("y n r here answer only the ask shown, not the " + plural(n, "selected ask") + "; esc returns to them")
		}
	case key.Matches(msg, m.keys.Log):
		m.openPager(modeLog)
	case key.Matches(msg, m.keys.Grants):
		m.mode = modeGrants // the list keeps its place while closed
	case key.Matches(msg, m.keys.Copy):
		if e := m.current(); e != nil {
			return m.copyCmd(copyText(e))
		}
	case key.Matches(msg, m.keys.Rule):
		return m.openRule()
	case key.Matches(msg, m.keys.ClearExpired):
		m.clearExpired()
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, m.keys.Quit):
		return m.quit(false)
	}
	return nil
}

// keyIgnored disarms a pending double press on any other key, and ignores
// a decision key pressed just after the highlighted ask changed (it moved
// under the person, or the settle time after a move has not passed), saying
// why on the status line.
func (m *Model) keyIgnored(msg tea.KeyMsg) bool {
	shifted := m.cursorShifted
	m.cursorShifted = false
	if !key.Matches(msg, m.keys.ApproveOnce, m.keys.Deny, m.keys.ApproveIdentical) {
		if m.armed != nil {
			m.status = "" // "press … again" no longer holds
		}
		m.armed = nil
	}
	if m.decisionKey(msg) {
		switch {
		case shifted:
			m.setStatus("the highlighted ask changed under you; look again, then press " + msg.String() + " again")
			return true
		case m.settling():
			m.setStatus("the highlight just changed: " + msg.String() + " is ignored for " +
				m.opts.Settle.String() + ", look, then press it again")
			m.statusSettle = true
			return true
		}
	} else if m.statusSettle {
		m.status = "" // the key that was ignored is no longer the point
	}
	return false
}

// mouse: in the queue a click highlights a row and the wheel moves the
// highlight; in the full view and the log the wheel scrolls. A click never
// decides anything.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if msg.Action != tea.MouseActionPress {
		return nil
	}
	if _, ok := m.active().(*pager); ok {
		var cmd tea.Cmd
		m.pager.vp, cmd = m.pager.vp.Update(msg)
		return cmd
	}
	if m.active() != nil || m.filtering {
		return nil
	}
	switch msg.Button {
	case tea.MouseButtonWheelUp:
		m.move(-1)
	case tea.MouseButtonWheelDown:
		m.move(1)
	case tea.MouseButtonLeft:
		if e := m.askAt(msg.Y); e != nil {
			m.highlight = e.ask.ID
			m.move(0) // a click is the person moving the highlight
		}
	}
	return nil
}

// decisionKey reports whether a key answers asks from the queue.
func (m *Model) decisionKey(msg tea.KeyMsg) bool {
	return key.Matches(msg, m.keys.ApproveOnce, m.keys.Deny, m.keys.ApproveIdentical,
		m.keys.ApproveSession, m.keys.DenyReason, m.keys.DenySession)
}

// move is the person moving the highlight: what they see is what they
// chose, so the settle time and any status about the old row end.
func (m *Model) move(delta int) {
	m.settleUntil, m.cursorShifted = time.Time{}, false
	m.status = ""
	m.highlightAt(max(0, indexOf(m.shown(), m.highlight)) + delta)
	m.warnOffSelection()
}

// warnOffSelection says so when the highlight is on an ask the selection
// leaves out: y would answer the selection, not what the detail shows.
func (m *Model) warnOffSelection() {
	if m.offSelection() {
		m.setStatus("⚠ y n r act on the " + plural(len(m.selectedShown()), "selected ask") +
			", not on the highlighted ask; esc clears the selection")
		m.statusHolds = m.offSelection
	}
}

// offSelection: asks are selected and shown, and the highlight is not one.
func (m *Model) offSelection() bool {
	sel := m.selectedShown()
	return len(sel) > 0 && !slices.Contains(sel, m.current())
}

// selectedShown are the selected asks a decision key would answer: pending
// and shown. A selected ask the filter hides is never answered.
func (m *Model) selectedShown() []*entry {
	return slices.DeleteFunc(slices.Clone(m.shown()), func(e *entry) bool { return !e.selected || e.state != statePending })
}

// clearSelection unselects every ask.
func (m *Model) clearSelection() {
	for _, e := range m.queue {
		e.selected = false
	}
	m.status = ""
}

func (m *Model) toggleSelect() {
	e := m.current()
	switch {
	case e == nil:
	case e.state == stateExpired:
		m.setStatus("expired asks cannot be selected")
	default:
		e.selected = !e.selected
	}
}

// clearExpired drops expired asks; a highlight on one moves to the next ask
// still waiting (else the last), not back to the top.
func (m *Model) clearExpired() {
	m.status = "" // it may name an ask that is about to go
	var next serve.AskID
	if e := m.current(); e != nil && e.state == stateExpired {
		shown := m.shown()
		rest := shown[max(indexOf(shown, m.highlight), 0):]
		if i := slices.IndexFunc(rest, func(f *entry) bool { return f.state != stateExpired }); i >= 0 {
			next = rest[i].ask.ID
		}
	}
	m.queue = slices.DeleteFunc(m.queue, func(e *entry) bool { return e.state == stateExpired })
	m.queueChanged()
	switch {
	case m.current() != nil:
	case next != 0:
		m.highlight = next
	default:
		m.highlightAt(len(m.shown()) - 1)
	}
}

// targets are the asks y, n and r act on: every selected pending ask, or
// else the highlighted one. Problems are reported on the status line and
// yield nil.
func (m *Model) targets() []serve.AskID {
	var keys []serve.AskID
	for _, e := range m.selectedShown() {
		keys = append(keys, e.ask.ID)
	}
	if len(keys) > 0 {
		return keys
	}
	if e := m.answerable(); e != nil {
		return []serve.AskID{e.ask.ID}
	}
	return nil
}

// answerable returns the highlighted ask if it can be answered now, and
// otherwise says why not.
func (m *Model) answerable() *entry {
	e := m.current()
	switch {
	case e == nil:
		m.setStatus("nothing to answer")
		return nil
	case e.state == stateExpired:
		m.setStatus("this ask expired (" + expiredWhy(e) + "); nothing was sent")
	case e.state == stateSending:
		m.setStatus("this ask is already being answered")
	default:
		return e
	}
	id := e.ask.ID
	m.statusHolds = func() bool { return m.highlight == id }
	return nil
}

// approves reports whether d approves: only approving waits for what was
// seen, since a denial widens nothing.
func approves(d serve.Decision) bool {
	return d.State != wire.StateDenied && d.State != wire.StateDeniedWithReason
}

// once and deny are y's and n's decision; send sets each target's Ask.
var once, deny = serve.Decision{State: wire.StateApproved}, serve.Decision{State: wire.StateDenied}

// decideTargets sends one decision per target, after the second press when
// twice. pressed is the key, what describes the decision; also are the
// other waiting asks it answers (a whole-session grant). An approval first
// checks the files of the writes and edits it answers (stampsCmd).
func (m *Model) decideTargets(pressed, what string, targets []serve.AskID, d serve.Decision, twice bool, also []serve.AskID) tea.Cmd {
	if len(targets) == 0 {
		return nil
	}
	approving := approves(d)
	if approving {
		if why := m.changeUnseen(targets); why != "" {
			m.setStatus(why)
			return nil
		}
	}
	if !m.confirmed(pressed, targets, twice) {
		m.setStatus("press " + pressed + " again to " + what + ": " + describe(m, targets))
		return nil
	}
	m.setStatus(what + ": " + describe(m, targets))
	a := approval{targets: targets, also: also, d: d}
	if approving {
		if cmd := m.stampsCmd(slices.Concat(targets, also), &a); cmd != nil {
			return cmd
		}
	}
	return m.carryOut(a)
}

// carryOut sends an approval's decisions, or writes its rule, once its
// files were checked: the asks still waiting must still have been seen
// whole, since a diff may have been read again meanwhile.
func (m *Model) carryOut(a approval) tea.Cmd {
	targets := stillPending(m, a.targets)
	if a.rule != nil {
		if why := m.changeUnseen(targets); why != "" {
			return m.refuseApproval(a, why)
		}
		return m.writeRule(*a.rule)
	}
	if len(targets) == 0 {
		return nil
	}
	if approves(a.d) {
		if why := m.changeUnseen(stillPending(m, slices.Concat(targets, a.also))); why != "" {
			return m.refuseApproval(a, why)
		}
	}
	cmds := make([]tea.Cmd, 0, len(targets))
	for _, k := range targets {
		cmds = append(cmds, m.send(a.d, k))
	}
	return tea.Batch(cmds...)
}

// refuseApproval says why an approval was not carried out; a rule dialog
// waiting for its write takes keys again.
func (m *Model) refuseApproval(a approval, why string) tea.Cmd {
	if a.rule != nil {
		m.ruleDialog.writing = false
		m.setStatus("not written: the rule would allow an ask not seen whole; look at it first, or narrow the pattern. " + why)
		return nil
	}
	m.setStatus("refused: " + why)
	return nil
}

// confirmed reports whether a decision may go out now: at once unless
// twice, else only on the second press of the same key for the same asks.
func (m *Model) confirmed(pressed string, targets []serve.AskID, twice bool) bool {
	if !twice {
		return true
	}
	if m.armed != nil && m.armed.key == pressed && slices.Equal(m.armed.targets, targets) {
		m.armed = nil
		return true
	}
	m.armed = &armedPress{key: pressed, targets: targets}
	return false
}

// send marks ask as in flight and returns the Cmd that decides it as d.
func (m *Model) send(d serve.Decision, ask serve.AskID) tea.Cmd {
	d.Ask = ask
	s := sentDecision{d: d}
	if e := m.find(d.Ask); e != nil {
		s.ask = e.ask
		e.state = stateSending
		e.selected = false
		if d.DenyFor != nil { // kept before the answer: serve denies the asks it covers meanwhile
			m.yourDeny = &sessionRule{e.ask.Session, *d.DenyFor, true}
		}
	}
	m.sent[d.Ask] = s
	b := m.opts.Backend
	return func() tea.Msg { return decidedMsg{Decision: d, Err: b.Decide(d)} }
}

// describe names the asks a decision acts on, for the status line and
// dialog titles.
func describe(q asks, ids []serve.AskID) string {
	if len(ids) == 1 {
		if e := q.find(ids[0]); e != nil {
			return label(e)
		}
	}
	return plural(len(ids), "ask")
}

// label names an ask in status messages and dialog titles, a path by its
// end as its row does.
func label(e *entry) string { return endLabel(e, 60) }

// openScope opens "approve for session" on e, from the queue or the full
// view.
func (m *Model) openScope(e *entry) {
	if len(e.ask.Scopes.Options) == 0 {
		// A relay may send none (too large with them, decision 0246).
		m.setStatus(cmp.Or(Sanitize(e.ask.Scopes.Note), "no approval for longer than once is offered for this ask"))
		return
	}
	m.scope.open(e)
	m.mode = modeScope
}

// openRule opens the rule dialog on the highlighted ask. A rule is checked
// against the ask's facts, so an ask without them gets none.
func (m *Model) openRule() tea.Cmd {
	e := m.current()
	switch {
	case m.opts.Rules == nil && m.opts.OverHub:
		m.setStatus("no rules from a hub console: the policy is on each relay's host; run 'permtui rule add' there")
	case m.opts.Rules == nil:
		m.setStatus("rules cannot be written from this console")
	case e == nil:
		m.setStatus("no ask to make a rule from")
	case e.ask.Request == nil || e.ask.Request.AccessIntent == nil:
		m.setStatus("this ask carries no facts (no accessIntent), so no rule can be checked against it")
	default:
		m.mode = modeRule
		return m.apply(m.ruleDialog.open(e, m.ruleWaiting()))
	}
	return nil
}

// ruleWaiting is every waiting ask a rule could decide (one with facts),
// for the rule dialog's preview.
func (m *Model) ruleWaiting() []*entry {
	return slices.DeleteFunc(m.pending(), func(w *entry) bool {
		return w.ask.Request == nil || w.ask.Request.AccessIntent == nil
	})
}

// refreshRuleWaiting gives an open rule dialog the waiting asks as they are
// now: an ask that arrived after it opened is previewed, named and checked
// like the others before enter can write the rule.
func (m *Model) refreshRuleWaiting() tea.Cmd {
	if m.mode != modeRule {
		return nil
	}
	return m.apply(m.ruleDialog.setWaiting(m.ruleWaiting())) // nil: nothing changed
}

// openDenySession opens "deny for the session" on the highlighted ask. A
// deny is matched against later asks' facts, so an ask without them gets
// none, and over a hub none is kept (decision 0104).
func (m *Model) openDenySession() tea.Cmd {
	e := m.current()
	switch {
	case e == nil || e.state != statePending:
		m.setStatus("no waiting ask to deny for the session")
	case m.opts.OverHub:
		m.setStatus("a deny for the session is not kept over a hub; r denies this ask with a reason")
	case e.ask.Request == nil || e.ask.Request.AccessIntent == nil:
		m.setStatus("this ask carries no facts (no accessIntent), so no later ask could be matched; r denies it with a reason")
	default:
		m.mode = modeDenySession
		return m.denyDialog.open(e)
	}
	return nil
}

// openReason opens "deny with reason" on targets, from the queue or the
// full view.
func (m *Model) openReason(targets []serve.AskID) tea.Cmd {
	if len(targets) == 0 {
		return nil
	}
	m.mode = modeReason
	return m.reason.open(targets)
}

// quit leaves at once when nothing waits for a person; otherwise it asks
// first. A second ctrl+c (force) always quits, leaving the waiting asks for
// the next server where that is possible, since nobody chose to deny them.
func (m *Model) quit(force bool) tea.Cmd {
	if m.pendingCount() == 0 || (force && m.mode == modeQuit) {
		m.leaveWaiting = force && m.opts.CanLeave
		return tea.Quit
	}
	m.mode = modeQuit
	return nil
}
