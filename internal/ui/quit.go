package ui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// quitDialog asks before quitting while asks wait for a person.
type quitDialog struct {
	*common
	q asks
}

func (d *quitDialog) update(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	switch {
	case key.Matches(k, d.keys.Quit, d.keys.ApproveOnce):
		return quitAction{}, nil
	case key.Matches(k, d.keys.Close, d.keys.Deny):
		return closeAction{}, nil
	}
	return nil, nil
}

func (d *quitDialog) gone() string { return "" }

func (d *quitDialog) help() help.KeyMap { return d.keys.overlayHelp(d.keys.Quit) }

func (d *quitDialog) view(int) []string {
	n := d.q.pendingCount()
	return []string{
		d.rule("quit?"),
		"",
		fmt.Sprintf("  %s still waiting for a person.", plural(n, "ask is", "asks are")),
		fmt.Sprintf("  Quit anyway? permtui then denies %s as \"permtui exited\".", map[bool]string{true: "it", false: "them"}[n == 1]),
		"",
		d.styles.Muted.Render("  q or y quits; esc or n stays"),
	}
}
