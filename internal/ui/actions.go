package ui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// handleKey routes a key press to the screen that has focus.
func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) {
		return m.quit(true)
	}
	switch m.mode {
	case modeScope:
		return m.scopeKey(msg)
	case modeReason:
		return m.reasonKey(msg)
	case modeView, modeLog:
		return m.pagerKey(msg)
	case modeGrants:
		return m.grantsKey(msg)
	case modeQuit:
		return m.quitKey(msg)
	}
	return m.queueKey(msg)
}

func (m *Model) queueKey(msg tea.KeyMsg) tea.Cmd {
	shifted := m.cursorShifted
	m.cursorShifted = false
	if !key.Matches(msg, m.keys.ApproveOnce, m.keys.Deny, m.keys.ApproveIdentical) {
		m.armed = nil
	}
	if shifted && key.Matches(msg, m.keys.ApproveOnce, m.keys.Deny, m.keys.ApproveIdentical,
		m.keys.ApproveSession, m.keys.DenyReason) {
		m.setStatus("the highlighted ask changed under you; look again, then press " + msg.String() + " again")
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Up):
		m.move(-1)
	case key.Matches(msg, m.keys.Down):
		m.move(1)
	case key.Matches(msg, m.keys.Select):
		m.toggleSelect()
	case key.Matches(msg, m.keys.ApproveOnce):
		return m.decideTargets(msg.String(), "approve once", m.targets(), once)
	case key.Matches(msg, m.keys.Deny):
		return m.decideTargets(msg.String(), "deny", m.targets(), deny)
	case key.Matches(msg, m.keys.ApproveIdentical):
		return m.decideTargets(msg.String(), "approve once (identical)", m.identicalTargets(), once)
	case key.Matches(msg, m.keys.ApproveSession):
		m.openScope()
	case key.Matches(msg, m.keys.DenyReason):
		return m.openReason()
	case key.Matches(msg, m.keys.View):
		m.openPager(modeView)
	case key.Matches(msg, m.keys.Log):
		m.openPager(modeLog)
	case key.Matches(msg, m.keys.Grants):
		m.mode = modeGrants
	case key.Matches(msg, m.keys.ClearExpired):
		m.clearExpired()
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, m.keys.Quit):
		return m.quit(false)
	}
	return nil
}

func (m *Model) move(delta int) {
	if len(m.queue) == 0 {
		return
	}
	i := max(0, m.index(m.highlight))
	i = min(max(i+delta, 0), len(m.queue)-1)
	m.highlight = m.queue[i].ask.ID
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
	var next serve.AskID
	if e := m.current(); e != nil && e.state == stateExpired {
		for _, f := range m.queue[m.index(m.highlight):] {
			if f.state != stateExpired {
				next = f.ask.ID
				break
			}
		}
	}
	kept := m.queue[:0]
	for _, e := range m.queue {
		if e.state != stateExpired {
			kept = append(kept, e)
		}
	}
	clear(m.queue[len(kept):])
	m.queue = kept
	switch {
	case m.current() != nil:
	case next != 0:
		m.highlight = next
	case len(m.queue) > 0:
		m.highlight = m.queue[len(m.queue)-1].ask.ID
	default:
		m.highlight = 0
	}
}

// targets are the asks y, n and r act on: every selected pending ask, or
// else the highlighted one. Problems are reported on the status line and
// yield nil.
func (m *Model) targets() []serve.AskID {
	var keys []serve.AskID
	for _, e := range m.queue {
		if e.selected && e.state == statePending {
			keys = append(keys, e.ask.ID)
		}
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
	case e.state == stateExpired:
		m.setStatus("this ask expired (the child stopped waiting); nothing was sent")
	case e.state == stateSending:
		m.setStatus("this ask is already being answered")
	default:
		return e
	}
	return nil
}

// identicalTargets are the pending asks identical to the highlighted one:
// same agent, surface and values (see identity).
func (m *Model) identicalTargets() []serve.AskID {
	cur := m.answerable()
	if cur == nil {
		return nil
	}
	id := identity(cur.ask)
	var keys []serve.AskID
	for _, e := range m.queue {
		if e.state == statePending && identity(e.ask) == id {
			keys = append(keys, e.ask.ID)
		}
	}
	return keys
}

// identity is what makes two asks the same question: the agent, the gate
// surface and every value the child fixed (match values, floor, asking units
// with their floors). Asks without facts compare by display surface and value.
func identity(a serve.Ask) string {
	r := a.Request
	if ai := r.AccessIntent; ai != nil {
		parts := []string{"intent", ai.Principal.AgentName, ai.Surface, deref(ai.Floor)}
		parts = append(parts, ai.MatchValues...)
		for _, u := range ai.AskingUnits {
			parts = append(parts, u.Command, deref(u.Floor))
		}
		return fmt.Sprintf("%q", parts)
	}
	return fmt.Sprintf("%q", []string{"display", r.RequesterAgentName, deref(r.Surface), deref(r.Value)})
}

type decisionFor func(id serve.AskID) serve.Decision

func once(id serve.AskID) serve.Decision { return serve.Decision{Ask: id, State: wire.StateApproved} }
func deny(id serve.AskID) serve.Decision { return serve.Decision{Ask: id, State: wire.StateDenied} }

// decideTargets sends one decision per target, after the second press when
// ConfirmDouble is on. pressed is the key, what describes the decision.
func (m *Model) decideTargets(pressed, what string, targets []serve.AskID, d decisionFor) tea.Cmd {
	if len(targets) == 0 {
		return nil
	}
	if !m.confirmed(pressed, targets) {
		m.setStatus("press " + pressed + " again to " + what + ": " + m.describe(targets))
		return nil
	}
	m.setStatus(what + ": " + m.describe(targets))
	cmds := make([]tea.Cmd, 0, len(targets))
	for _, k := range targets {
		cmds = append(cmds, m.send(d(k)))
	}
	return tea.Batch(cmds...)
}

// confirmed reports whether a decision may go out now: always without
// ConfirmDouble, else only on the second press of the same key for the same
// asks.
func (m *Model) confirmed(pressed string, targets []serve.AskID) bool {
	if !m.opts.ConfirmDouble {
		return true
	}
	if m.armed != nil && m.armed.key == pressed && slices.Equal(m.armed.targets, targets) {
		m.armed = nil
		return true
	}
	m.armed = &armedPress{key: pressed, targets: targets}
	return false
}

// send marks the ask as in flight and returns the Cmd that calls the Backend.
func (m *Model) send(d serve.Decision) tea.Cmd {
	if e := m.find(d.Ask); e != nil {
		e.state = stateSending
		e.selected = false
	}
	m.sent[d.Ask] = d
	b := m.opts.Backend
	return func() tea.Msg { return decidedMsg{Decision: d, Err: b.Decide(d)} }
}

func (m *Model) describe(keys []serve.AskID) string {
	if len(keys) == 1 {
		if e := m.find(keys[0]); e != nil {
			return m.label(e)
		}
	}
	return plural(len(keys), "ask")
}

// label names an ask in status messages and dialog titles.
func (m *Model) label(e *entry) string { return truncate(askLabel(e.ask), 60) }

// scopeOption is one answer offered by "approve for session".
type scopeOption struct {
	title    string
	state    wire.State
	family   bool
	recorder string       // who records the grants
	grants   []wire.Grant // exactly what gets recorded; nil when the child computes it
}

type scopeChoice struct {
	ask     serve.AskID
	options []scopeOption
	chosen  int
	note    string // why an option is missing
}

// scopeOptions lists the session scopes an ask allows: this subagent always;
// the whole session only with a sessionApproval suggestion (permtui needs
// the grants to record); each "both directions" only when resolve.Widen
// allows it.
func scopeOptions(r *wire.Request) ([]scopeOption, string) {
	var proven []wire.Grant
	if r.SessionApproval != nil {
		proven = r.SessionApproval.Grants
	}
	widened, wide := resolve.Widen(proven)
	opts := []scopeOption{{title: "this subagent only", state: wire.StateApprovedForSession,
		recorder: "the child records", grants: proven}}
	if wide {
		opts = append(opts, scopeOption{title: "this subagent, both directions (read and write)", state: wire.StateApprovedForSession,
			family: true, recorder: "the child records", grants: widened})
	}
	if r.SessionApproval == nil {
		return opts, "the whole session is not offered: the request carries no sessionApproval suggestion, so permtui has no grant to record"
	}
	opts = append(opts, scopeOption{title: "the whole session", state: wire.StateApprovedForServingSession,
		recorder: "permtui records", grants: proven})
	if wide {
		opts = append(opts, scopeOption{title: "the whole session, both directions (read and write)", state: wire.StateApprovedForServingSession,
			family: true, recorder: "permtui records", grants: widened})
	}
	return opts, ""
}

func (m *Model) openScope() {
	e := m.answerable()
	if e == nil {
		return
	}
	opts, note := scopeOptions(e.ask.Request)
	m.scope = scopeChoice{ask: e.ask.ID, options: opts, note: note}
	m.mode = modeScope
}

func (m *Model) scopeKey(msg tea.KeyMsg) tea.Cmd {
	if !key.Matches(msg, m.keys.Confirm) {
		m.armed = nil
	}
	switch {
	case key.Matches(msg, m.keys.Close):
		m.closeOverlay("nothing decided")
	case key.Matches(msg, m.keys.Up):
		m.scope.chosen = max(m.scope.chosen-1, 0)
	case key.Matches(msg, m.keys.Down):
		m.scope.chosen = min(m.scope.chosen+1, len(m.scope.options)-1)
	case key.Matches(msg, m.keys.Confirm):
		o := m.scope.options[m.scope.chosen]
		d := serve.Decision{Ask: m.scope.ask, State: o.state, Family: o.family}
		cmd := m.decideTargets(msg.String(), "approve for "+o.title, []serve.AskID{m.scope.ask},
			func(serve.AskID) serve.Decision { return d })
		if cmd != nil {
			m.mode = modeQueue
		}
		return cmd
	}
	return nil
}

func (m *Model) openReason() tea.Cmd {
	targets := m.targets()
	if len(targets) == 0 {
		return nil
	}
	m.reasonFor = targets
	m.reason.Reset()
	m.mode = modeReason
	return m.reason.Focus()
}

func (m *Model) reasonKey(msg tea.KeyMsg) tea.Cmd {
	if !key.Matches(msg, m.keys.Confirm) {
		m.armed = nil
	}
	switch {
	case key.Matches(msg, m.keys.Close):
		m.reason.Blur()
		m.closeOverlay("nothing decided")
		return nil
	case key.Matches(msg, m.keys.Confirm):
		text := strings.TrimSpace(m.reason.Value())
		if text == "" {
			m.setStatus("type a reason first (esc cancels)")
			return nil
		}
		targets := m.stillPending(m.reasonFor)
		cmd := m.decideTargets(msg.String(), "deny with reason", targets, func(id serve.AskID) serve.Decision {
			return serve.Decision{Ask: id, State: wire.StateDeniedWithReason, Reason: text}
		})
		if cmd != nil {
			m.reason.Blur()
			m.mode = modeQueue
		}
		return cmd
	}
	var cmd tea.Cmd
	m.reason, cmd = m.reason.Update(msg)
	return cmd
}

func (m *Model) stillPending(ids []serve.AskID) []serve.AskID {
	var out []serve.AskID
	for _, id := range ids {
		if e := m.find(id); e != nil && e.state == statePending {
			out = append(out, id)
		}
	}
	return out
}

func (m *Model) pagerKey(msg tea.KeyMsg) tea.Cmd {
	opener := m.keys.View
	if m.mode == modeLog {
		opener = m.keys.Log
	}
	if key.Matches(msg, m.keys.Close, opener) {
		m.closeOverlay("")
		return nil
	}
	var cmd tea.Cmd
	m.pager, cmd = m.pager.Update(msg)
	return cmd
}

func (m *Model) grantsKey(msg tea.KeyMsg) tea.Cmd {
	rows := m.grantRows()
	switch {
	case key.Matches(msg, m.keys.Close, m.keys.Grants):
		m.closeOverlay("")
	case key.Matches(msg, m.keys.Up):
		m.grantCursor = max(m.grantCursor-1, 0)
	case key.Matches(msg, m.keys.Down):
		m.grantCursor = min(m.grantCursor+1, max(len(rows)-1, 0))
	case key.Matches(msg, m.keys.Revoke):
		if m.grantCursor >= len(rows) {
			m.setStatus("no grant to revoke")
			return nil
		}
		row := rows[m.grantCursor]
		b := m.opts.Backend
		m.setStatus("revoking " + Sanitize(row.grant.Surface) + " " + Sanitize(row.grant.Pattern) + "…")
		return func() tea.Msg {
			return revokedMsg{Session: row.session, Grant: row.grant, Err: b.RevokeGrant(row.session, row.grant)}
		}
	}
	return nil
}

type grantRow struct {
	session string
	grant   wire.Grant
}

// grantRows flattens the grants per session, sessions in id order.
func (m *Model) grantRows() []grantRow {
	var rows []grantRow
	for _, s := range sortedKeys(m.grants) {
		for _, g := range m.grants[s] {
			rows = append(rows, grantRow{session: s, grant: g})
		}
	}
	return rows
}

// quit leaves at once when nothing waits for a person; otherwise it asks
// first. A second ctrl+c (force) always leaves.
func (m *Model) quit(force bool) tea.Cmd {
	if m.pendingCount() == 0 || (force && m.mode == modeQuit) {
		return tea.Quit
	}
	m.mode = modeQuit
	return nil
}

func (m *Model) quitKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Quit, m.keys.ApproveOnce):
		return tea.Quit
	case key.Matches(msg, m.keys.Close, m.keys.Deny):
		m.closeOverlay("")
	}
	return nil
}

// closeOverlay returns to the queue; it never decides anything.
func (m *Model) closeOverlay(status string) {
	m.mode = modeQueue
	m.armed = nil
	if status != "" {
		m.setStatus(status)
	}
}

// closeStaleOverlay closes a dialog whose ask can no longer be answered (it
// was answered automatically, expired or vanished), so a key meant for it
// cannot land elsewhere.
func (m *Model) closeStaleOverlay() {
	switch m.mode {
	case modeScope:
		if e := m.find(m.scope.ask); e == nil || e.state != statePending {
			m.closeOverlay("that ask is no longer waiting; nothing decided")
		}
	case modeReason:
		if len(m.stillPending(m.reasonFor)) == 0 {
			m.reason.Blur()
			m.closeOverlay("those asks are no longer waiting; nothing decided")
		}
	case modeView:
		if e := m.find(m.viewID); e == nil {
			m.closeOverlay("that ask is no longer waiting")
		}
	}
}

// choiceWords says what a person chose, for the log: the scope of a session
// approval with the grants it records; the response tells the rest.
func choiceWords(d serve.Decision, r *wire.Request) string {
	if d.State != wire.StateApprovedForSession && d.State != wire.StateApprovedForServingSession {
		return ""
	}
	opts, _ := scopeOptions(r)
	for _, o := range opts {
		if o.state == d.State && o.family == d.Family {
			return "for " + o.title + "; " + o.recorder + " " + grantsText(o.grants)
		}
	}
	return ""
}
