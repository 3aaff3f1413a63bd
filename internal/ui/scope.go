package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/serve"
)

// choiceWords says what a person chose, for the log: the scope of a session
// approval with what it records; the response tells the rest.
func choiceWords(d serve.Decision, a serve.Ask) string {
	o, ok := a.Scopes.Find(d.Scope)
	if !ok {
		return ""
	}
	return "for " + o.Title + "; " + scopeEffect(o)
}

// scopeDialog is "approve for session": the scopes serve offers for one
// ask, shown as serve words them; it returns the chosen kind.
type scopeDialog struct {
	*common
	q      asks
	ask    serve.AskID
	scopes serve.Scopes
	chosen int
}

func (d *scopeDialog) open(e *entry) {
	d.ask, d.chosen, d.scopes = e.ask.ID, 0, e.ask.Scopes
}

func (d *scopeDialog) update(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	switch {
	case key.Matches(k, d.keys.Close):
		return closeAction{"nothing decided"}, nil
	case key.Matches(k, d.keys.Up):
		d.chosen = max(d.chosen-1, 0)
	case key.Matches(k, d.keys.Down):
		d.chosen = min(d.chosen+1, len(d.scopes.Options)-1)
	case key.Matches(k, d.keys.Confirm):
		o := d.scopes.Options[d.chosen]
		dec := serve.Decision{Ask: d.ask, Scope: o.Kind}
		return decideAction{pressed: k.String(), what: "approve for " + o.Title, targets: []serve.AskID{d.ask},
			d: func(serve.AskID) serve.Decision { return dec }}, nil
	}
	return nil, nil
}

func (d *scopeDialog) gone() string {
	if e := d.q.find(d.ask); e == nil || e.state != statePending {
		return "that ask is no longer waiting; nothing decided"
	}
	return ""
}

func (d *scopeDialog) help() help.KeyMap {
	return d.keys.overlayHelp(d.keys.Up, d.keys.Down, d.keys.Confirm)
}

func (d *scopeDialog) view(int) []string {
	s := d.styles
	lines := []string{d.rule("approve for session")}
	e := d.q.find(d.ask)
	if e == nil {
		return lines
	}
	r := e.ask.Request
	lines = append(lines, "  "+Sanitize(agentOf(r))+" asks for "+Sanitize(serve.SurfaceOf(r))+":")
	lines = append(lines, d.indented(Sanitize(shortValue(r)), 4, maxFactLines)...)
	lines = append(lines, s.Muted.Render("  whole session = every subagent of root "+Sanitize(e.ask.Session)), "")
	for i, o := range d.scopes.Options {
		mark, style := "  ( ) ", s.Value
		if i == d.chosen {
			mark, style = "▸ (•) ", s.Option
		}
		effect := o.Effect
		if o.Grants != nil {
			effect += ":"
		}
		if ansi.StringWidth(mark+o.Title+" — "+effect) <= d.width {
			lines = append(lines, style.Render(mark+o.Title)+s.Muted.Render(" — "+effect))
		} else {
			lines = append(lines, style.Render(mark+o.Title))
			lines = append(lines, d.mutedWrapped(effect, 8)...)
		}
		for _, g := range o.Grants {
			lines = append(lines, d.indented(pad(Sanitize(g.Surface), 24)+" "+Sanitize(g.Pattern), 8, 0)...)
		}
		if o.Caveat != "" {
			lines = append(lines, d.mutedWrapped(o.Caveat, 8)...)
		}
	}
	if d.scopes.Note != "" {
		lines = append(append(lines, ""), d.mutedWrapped(d.scopes.Note, 0)...)
	}
	return append(lines, "", s.Muted.Render("enter approves with the marked scope; esc cancels and decides nothing"))
}

// mutedWrapped word-wraps an explanation under an indent.
func (d *scopeDialog) mutedWrapped(text string, indent int) []string {
	lines := wrapWords(text, max(d.width-indent, 10))
	for i, l := range lines {
		lines[i] = strings.Repeat(" ", indent) + d.styles.Muted.Render(l)
	}
	return lines
}
