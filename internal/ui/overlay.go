package ui

import (
	"slices"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
)

// overlay is a screen over the queue: a dialog (scope, reason, session
// deny, rule, quit) or a page (full view and log, grants). It reads the
// shared common, and the queue through its q; it changes nothing outside
// itself. What the person asked for comes back to the root as an action,
// which the root carries out in apply: every decision, revocation and
// close happens there.
type overlay interface {
	// update handles one message (keys, and for text input anything else).
	update(tea.Msg) (action, tea.Cmd)
	// view is the body between the header and the status line.
	view(height int) []string
	help() help.KeyMap
	// gone says why the overlay can no longer act (its asks were answered,
	// expired or vanished), or "" while it can.
	gone() string
}

// asks is what an overlay may read of the queue.
type asks interface {
	find(serve.AskID) *entry
	pendingCount() int
	pending() []*entry
	unsent() []string
	hidden(*entry) bool // the filter hides it
}

// An action is what an overlay asks the root to do; nil is nothing.
type action interface{ isAction() }

type (
	// closeAction returns to the queue, with status on the status line
	// when it is not empty. It never decides anything.
	closeAction struct{ status string }
	// statusAction puts a message on the status line.
	statusAction struct{ text string }
	// decideAction answers each of targets (still pending ones only) as d;
	// pressed and what feed the double-press confirmation and the status
	// line. The overlay closes once the decisions are on their way.
	decideAction struct {
		pressed, what string
		targets       []serve.AskID
		d             serve.Decision
		also          []serve.AskID // other waiting asks the decision answers too (a whole-session grant)
	}
	// revokeAction withdraws one whole-session grant or session deny.
	revokeAction struct{ row grantRow }
	// quitAction leaves the console; leave says the waiting asks stay for
	// the next server rather than being denied.
	quitAction struct{ leave bool }
	// openScopeAction opens "approve for session" on ask (from the full view).
	openScopeAction struct{ ask serve.AskID }
	// openReasonAction opens "deny with reason" on targets (from the full view).
	openReasonAction struct{ targets []serve.AskID }
	// copyAction copies text to the clipboard.
	copyAction struct{ text string }
)

func (closeAction) isAction()  {}
func (statusAction) isAction() {}
func (decideAction) isAction() {}
func (revokeAction) isAction() {}
func (quitAction) isAction()   {}

func (openScopeAction) isAction()  {}
func (openReasonAction) isAction() {}
func (copyAction) isAction()       {}

// active is the overlay the mode shows, or nil for the queue. It is the one
// place that maps a mode to its component.
func (m *Model) active() overlay {
	switch m.mode {
	case modeScope:
		return &m.scope
	case modeReason:
		return &m.reason
	case modeView, modeLog:
		return &m.pager
	case modeGrants:
		return &m.grantList
	case modeQuit:
		return &m.quitDialog
	case modeRule:
		return &m.ruleDialog
	case modeDenySession:
		return &m.denyDialog
	}
	return nil
}

// overlayMsg hands a message to the open overlay and carries out its action.
func (m *Model) overlayMsg(o overlay, msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyMsg); ok && !key.Matches(k, m.keys.Confirm) {
		m.armed = nil // a double press must be two presses of one key in a row
	}
	act, cmd := o.update(msg)
	return tea.Batch(cmd, m.apply(act))
}

// apply carries out what an overlay asked for.
func (m *Model) apply(act action) tea.Cmd {
	switch a := act.(type) {
	case closeAction:
		m.closeOverlay(a.status)
	case statusAction:
		m.setStatus(a.text)
	case decideAction:
		if why := m.alsoUnseen(a); why != "" {
			m.setStatus(why)
			return nil
		}
		cmd := m.decideTargets(a.pressed, a.what, stillPending(m, a.targets), a.d, m.opts.ConfirmDouble, stillPending(m, a.also))
		if cmd != nil {
			m.mode = modeQueue
		}
		return cmd
	case revokeAction:
		r, b := a.row, m.opts.Backend
		m.setStatus("revoking " + grantText(r.grant) + "…")
		return func() tea.Msg {
			msg := revokedMsg{rule: r.sessionRule}
			if r.deny {
				msg.err = b.RevokeDeny(r.session, serve.SessionDeny{Grant: r.grant, Reason: r.reason})
			} else {
				msg.err = b.RevokeGrant(r.session, r.grant)
			}
			return msg
		}
	case quitAction:
		m.leaveWaiting = a.leave
		return tea.Quit
	case openScopeAction:
		if e := m.find(a.ask); e != nil && e.state == statePending {
			m.openScope(e)
		}
	case openReasonAction:
		return m.openReason(stillPending(m, a.targets))
	case copyAction:
		return m.copyCmd(a.text)
	case previewRuleAction:
		if a.note != "" {
			m.setStatus(a.note)
		}
		rules := m.opts.Rules
		return func() tea.Msg { return rulePreviewMsg{seq: a.seq, preview: rules.PreviewRule(a.draft)} }
	case wroteRuleAction:
		m.closeOverlay(a.report)
		// The reload answers the waiting asks the rule covers within
		// milliseconds: they are counted after the report, not in its place.
		m.streak.lead = m.status
	case writeRuleAction:
		if a.draft.Action != resolve.Allow {
			return m.writeRule(a)
		}
		held := approval{rule: &a, targets: stillPending(m, a.decides)}
		if cmd := m.stampsCmd(held.targets, &held); cmd != nil {
			return cmd
		}
		return m.carryOut(held)
	}
	return nil
}

// writeRule writes the rule in a command.
func (m *Model) writeRule(a writeRuleAction) tea.Cmd {
	rules := m.opts.Rules
	m.setStatus("writing the rule…")
	return func() tea.Msg {
		status, err := rules.WriteRule(a.draft, a.confirm, a.digest)
		return ruleWrittenMsg{status: status, err: err}
	}
}

// closeOverlay returns to the queue; it never decides anything.
func (m *Model) closeOverlay(status string) {
	m.mode = modeQueue
	m.armed = nil
	if status != "" {
		m.setStatus(status)
	}
}

// releaseClosed lets go of what closed overlays keep of asks: the full
// view's lines and the rule dialog's facts of every waiting ask would keep
// those asks' strings alive, after they were answered, until reopened.
func (m *Model) releaseClosed() {
	if m.mode != modeView && m.mode != modeLog {
		m.pager.release()
	}
	if m.mode != modeRule {
		m.ruleDialog.base, m.ruleDialog.preview = RuleDraft{}, nil
	}
}

// closeStaleOverlay closes an overlay whose asks can no longer be answered
// (answered automatically, expired or vanished), so a key meant for it
// cannot land elsewhere.
func (m *Model) closeStaleOverlay() {
	if o := m.active(); o != nil {
		if why := o.gone(); why != "" {
			m.closeOverlay(why)
		}
	}
}

func stillPending(q asks, ids []serve.AskID) []serve.AskID {
	return slices.DeleteFunc(slices.Clone(ids), func(id serve.AskID) bool {
		e := q.find(id)
		return e == nil || e.state != statePending
	})
}

// askGone is gone for a dialog on one ask.
func (c *common) askGone(id serve.AskID) string {
	if e := c.q.find(id); e == nil || e.state != statePending {
		return "that ask is no longer waiting; nothing decided"
	}
	return ""
}
