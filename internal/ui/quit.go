package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// quitDialog asks before quitting while asks wait for a person.
type quitDialog struct {
	*common
	q        asks
	canLeave bool // L leaves the waiting asks for the next server
	overHub  bool // the asks stay at the hub: quitting denies nothing
}

func (d *quitDialog) update(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	switch {
	case key.Matches(k, d.keys.Quit, d.keys.ApproveOnce):
		return quitAction{}, nil
	case d.canLeave && key.Matches(k, d.keys.Leave):
		return quitAction{leave: true}, nil
	case key.Matches(k, d.keys.Close, d.keys.Deny):
		return closeAction{}, nil
	}
	return nil, nil
}

func (d *quitDialog) gone() string { return "" }

func (d *quitDialog) help() help.KeyMap {
	if d.overHub {
		return d.keys.overlayHelp(d.keys.Quit)
	}
	if !d.canLeave {
		return d.keys.overlayHelp(relabel(d.keys.Quit, "deny them, quit"))
	}
	return d.keys.overlayHelp(relabel(d.keys.Quit, "deny them, quit"), d.keys.Leave)
}

func (d *quitDialog) view(int) []string {
	n := d.q.pendingCount()
	them := map[bool]string{true: "it", false: "them"}[n == 1]
	if d.overHub {
		return []string{
			d.rule("quit?"),
			"",
			fmt.Sprintf("  %s still waiting for a person.", plural(n, "ask is", "asks are")),
			fmt.Sprintf("  q or y quits; the hub keeps %s for another console.", them),
			"",
			d.styles.Muted.Render("  esc or n stays"),
		}
	}
	lines := []string{
		d.rule("quit?"),
		"",
		fmt.Sprintf("  %s still waiting for a person. Quit and", plural(n, "ask is", "asks are")),
		"",
		fmt.Sprintf("  q or y: deny %s as \"permtui exited\" (the children go on at once)?", them),
	}
	if d.canLeave {
		lines[len(lines)-1] = strings.TrimSuffix(lines[len(lines)-1], "?") + ", or"
		lines = append(lines,
			fmt.Sprintf("  L:      leave %s for the next server (the children keep waiting until", them),
			"          their timeout; one that watches the heartbeat may give up sooner)?")
	}
	return append(lines, "", d.styles.Muted.Render("  esc or n stays"))
}
