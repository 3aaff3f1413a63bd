package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// denyDialog is "deny for the session" (decision 0104): the reason the
// agents see and the surface and pattern that later asks of the root
// session are denied by, the pattern prefilled from the child's
// whole-session suggestion and editable as in the scope dialog.
type denyDialog struct {
	*common
	ask     serve.AskID
	surface string
	reason  textinput.Model
	pattern textinput.Model
	// onPattern: tab moved the cursor to the pattern.
	onPattern bool
	// armed: enter was pressed once on a deny that reaches beyond the ask's
	// surface or values (decision 0216); the next enter records it.
	armed bool
}

func newDenyDialog(c *common) denyDialog {
	reason := newInput("reason:  ", 500)
	reason.Placeholder = "shown to the agents, now and for every later match"
	return denyDialog{common: c, reason: reason, pattern: newInput("pattern: ", 1000)}
}

// open prefills from the ask: the whole-session suggestion when the child
// sent one grant, else the surface and the exact value.
func (d *denyDialog) open(e *entry) tea.Cmd {
	ai := e.ask.Request.AccessIntent
	g := wire.Grant{Surface: ai.Surface}
	if len(ai.MatchValues) > 0 {
		g.Pattern = ai.MatchValues[0]
	}
	if o, ok := e.ask.Scopes.Find(serve.ScopeSession); ok && len(o.Grants) == 1 {
		g = o.Grants[0]
	}
	d.ask, d.surface, d.onPattern, d.armed = e.ask.ID, g.Surface, false, false
	d.reason.Reset()
	d.pattern.SetValue(g.Pattern)
	d.pattern.CursorEnd()
	d.pattern.Blur()
	d.resize()
	return d.reason.Focus()
}

// resize fits the inputs to the terminal: on open and on each resize, never
// while drawing, so view stays free of state changes.
func (d *denyDialog) resize() {
	d.reason.Width = max(d.width-len(d.reason.Prompt)-4, 10)
	d.pattern.Width = d.reason.Width
}

func (d *denyDialog) deny() wire.Grant {
	return wire.Grant{Surface: d.surface, Pattern: strings.TrimSpace(d.pattern.Value())}
}

// reach names how the deny reaches beyond the ask, as the scope dialog
// names a grant's reach (serve.Width): "" when it does not.
func (d *denyDialog) reach() string {
	e := d.q.find(d.ask)
	if e == nil {
		return ""
	}
	return strings.Join(widthWords(serve.Width(e.ask.Request, d.deny(), d.home != "")), "; ")
}

func (d *denyDialog) update(msg tea.Msg) (action, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok {
		if !key.Matches(k, d.keys.Confirm) {
			d.armed = false
		}
		switch {
		case key.Matches(k, d.keys.Close):
			return closeAction{"nothing decided"}, nil
		case key.Matches(k, d.keys.NextField):
			d.onPattern = !d.onPattern
			if d.onPattern {
				d.reason.Blur()
				return nil, d.pattern.Focus()
			}
			d.pattern.Blur()
			return nil, d.reason.Focus()
		case key.Matches(k, d.keys.Confirm):
			reason, g, reach := strings.TrimSpace(d.reason.Value()), d.deny(), d.reach()
			switch {
			case reason == "":
				return statusAction{"type a reason first: the agents see it (esc cancels)"}, nil
			case !d.coverage().ask:
				return statusAction{"the pattern does not cover this ask; tab edits it"}, nil
			case !d.armed && reach != "":
				d.armed = true
				return statusAction{"the deny reaches beyond this ask for every agent of the session (" + grantText(g) + ": " +
					reach + "): enter again records it; tab edits the pattern"}, nil
			}
			return decideAction{pressed: k.String(), what: "deny for the session with " + blanked(g.Pattern),
				targets: []serve.AskID{d.ask}, d: serve.Decision{State: wire.StateDeniedWithReason, Reason: reason, DenyFor: &g}}, nil
		}
	}
	if d.onPattern {
		return nil, typeInto(&d.pattern, msg)
	}
	return nil, typeInto(&d.reason, msg)
}

// coverage is what the deny covers: this ask, and how many other waiting
// asks; a deny covers a chain by any of its units, as serve judges it.
func (d *denyDialog) coverage() coverage {
	return coverageOf(d.q, d.ask, []wire.Grant{d.deny()}, true, d.home)
}

func (d *denyDialog) gone() string { return d.askGone(d.ask) }

func (d *denyDialog) help() help.KeyMap {
	return d.keys.overlayHelp(d.keys.NextField, relabel(d.keys.Confirm, "deny"))
}

func (d *denyDialog) view(height int) []string {
	s := d.styles
	lines, ok := d.sessionAsk(d.ask, "deny for the session")
	if !ok {
		return lines
	}
	lines = append(lines, "  "+d.reason.View(), "  "+d.pattern.View())
	cov := d.coverage()
	text, style := "surface "+Sanitize(d.surface)+"; covers this ask", s.Muted
	if !cov.ask {
		text, style = "surface "+Sanitize(d.surface)+"; ⚠ does not cover this ask: enter is refused", s.Warning
	}
	lines = append(lines, "  "+style.Render(text))
	if w := d.reach(); w != "" {
		lines = append(lines, d.wrapped(s.Warning, "⚠ beyond this ask, for every agent of the session (enter twice records it): "+w, 2)...)
	}
	if len(cov.others) > 0 {
		lines = append(lines, "  "+s.Warning.Render("also denies "+plural(len(cov.others), "other waiting ask")+" at once:"))
	}
	lines = append(append(lines, d.othersLines(cov.others, nil, 4)...), "")
	lines = append(lines, d.wrapped(s.Muted, "Every later ask of this root session that the pattern covers is denied with this reason, before grants and the policy; p lists and revokes it.", 2)...)
	lines = append(lines, "", s.Muted.Render("tab moves between reason and pattern; enter denies; esc cancels, decides nothing"))
	return fitLines(lines, height)
}
