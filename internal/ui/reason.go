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

// reasonDialog is "deny with reason": a text input for the reason the agent
// sees, over the asks it will deny.
type reasonDialog struct {
	*common
	input   textinput.Model
	targets []serve.AskID
}

func newReasonDialog(c *common) reasonDialog {
	ti := newInput("reason: ", 500)
	ti.Placeholder = "reason shown to the agent"
	return reasonDialog{common: c, input: ti}
}

// resize fits the input to the terminal width: on open and on each resize.
func (d *reasonDialog) resize() { d.input.Width = max(d.width-len(d.input.Prompt)-2, 10) }

func (d *reasonDialog) open(targets []serve.AskID) tea.Cmd {
	d.targets = targets
	d.resize()
	d.input.Reset()
	return d.input.Focus()
}

func (d *reasonDialog) update(msg tea.Msg) (action, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok {
		switch {
		case key.Matches(k, d.keys.Close):
			return closeAction{"nothing decided"}, nil
		case key.Matches(k, d.keys.Confirm):
			text := strings.TrimSpace(d.input.Value())
			if text == "" {
				return statusAction{"type a reason first (esc cancels)"}, nil
			}
			return decideAction{pressed: k.String(), what: "deny with reason", targets: d.targets,
				d: serve.Decision{State: wire.StateDeniedWithReason, Reason: text}}, nil
		}
	}
	return nil, typeInto(&d.input, msg)
}

func (d *reasonDialog) gone() string {
	if len(stillPending(d.q, d.targets)) == 0 {
		return "those asks are no longer waiting; nothing decided"
	}
	return ""
}

func (d *reasonDialog) help() help.KeyMap { return d.keys.overlayHelp(d.keys.Confirm) }

func (d *reasonDialog) view(height int) []string {
	lines := []string{
		d.rule("deny with reason: " + describe(d.q, d.targets)),
		d.input.View(),
		d.styles.Muted.Render("the agent sees this reason; enter denies, esc cancels and decides nothing"),
	}
	if len(d.targets) == 1 {
		if e := d.q.find(d.targets[0]); e != nil {
			lines = append(lines, d.rule("the ask"))
			lines = append(lines, d.renderFields(detailFields(e), false, maxFactLines)...)
		}
	} else {
		lines = append(lines, d.rule("the asks"))
		for _, id := range d.targets {
			if e := d.q.find(id); e != nil {
				lines = append(lines, "  "+askLabel(e.ask))
			}
		}
	}
	return fitLines(lines, height)
}
