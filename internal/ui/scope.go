package ui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// scopeOption is one answer offered by "approve for session".
type scopeOption struct {
	title    string
	state    wire.State
	family   bool
	recorder string       // who records the grants
	grants   []wire.Grant // exactly what gets recorded; nil when the child computes it
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

// scopeDialog is "approve for session": the scopes one ask allows, each
// with exactly the grants it records.
type scopeDialog struct {
	*common
	q       asks
	ask     serve.AskID
	options []scopeOption
	chosen  int
	note    string // why an option is missing
}

func (d *scopeDialog) open(e *entry) {
	d.ask, d.chosen = e.ask.ID, 0
	d.options, d.note = scopeOptions(e.ask.Request)
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
		d.chosen = min(d.chosen+1, len(d.options)-1)
	case key.Matches(k, d.keys.Confirm):
		o := d.options[d.chosen]
		dec := serve.Decision{Ask: d.ask, State: o.state, Family: o.family}
		return decideAction{pressed: k.String(), what: "approve for " + o.title, targets: []serve.AskID{d.ask},
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
	lines = append(lines, "  "+Sanitize(agentOf(r))+" asks for "+Sanitize(surfaceOf(r))+":")
	lines = append(lines, d.indented(Sanitize(shortValue(r)), 4, maxFactLines)...)
	lines = append(lines, s.Muted.Render("  whole session = every subagent of root "+Sanitize(e.ask.Session)), "")
	for i, o := range d.options {
		mark, style := "  ( ) ", s.Value
		if i == d.chosen {
			mark, style = "▸ (•) ", s.Option
		}
		lines = append(lines, style.Render(mark+o.title)+s.Muted.Render(" — "+o.recorder+":"))
		if o.grants == nil {
			lines = append(lines, "        "+grantsText(nil))
		}
		for _, g := range o.grants {
			lines = append(lines, d.indented(pad(Sanitize(g.Surface), 24)+" "+Sanitize(g.Pattern), 8, 0)...)
		}
	}
	if d.note != "" {
		lines = append(lines, "", s.Muted.Render(d.note))
	}
	return append(lines, "", s.Muted.Render("enter approves with the marked scope; esc cancels and decides nothing"))
}
