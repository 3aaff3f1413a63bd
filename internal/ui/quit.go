package ui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// quitDialog asks before quitting while asks wait for a person. Its ways
// out are capital letters no other screen uses for backing out: q, y, n,
// enter and esc are habits (close, confirm) and never decide asks here
// (decision 0150).
type quitDialog struct {
	*common
	canLeave bool // L leaves the waiting asks for the next server
	overHub  bool // the asks stay at the hub: quitting denies nothing
}

func (d *quitDialog) update(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	switch {
	case d.overHub && key.Matches(k, d.keys.Leave):
		return quitAction{}, nil // the hub keeps them: nothing is denied
	case !d.overHub && key.Matches(k, d.keys.DenyQuit):
		return quitAction{}, nil
	case d.canLeave && key.Matches(k, d.keys.Leave):
		return quitAction{leave: true}, nil
	case key.Matches(k, d.keys.ApproveOnce):
		return statusAction{text: yRefused + ": " + d.choices() + "; " + stayKeys}, nil
	case key.Matches(k, d.keys.Close, d.keys.Deny, d.keys.Quit, d.keys.Confirm):
		return closeAction{}, nil
	}
	return nil, nil
}

// choices names the keys that quit, and the waiting asks as the prompt
// does: one is "it".
func (d *quitDialog) choices() string {
	them := itOrThem(d.q.pendingCount())
	switch {
	case d.overHub:
		return "L quits"
	case d.canLeave:
		return "D denies " + them + " and quits, L leaves " + them + " and quits"
	}
	return "D denies " + them + " and quits"
}

func (d *quitDialog) gone() string { return "" }

func (d *quitDialog) help() help.KeyMap {
	stay := relabel(d.keys.Close, "stay")
	switch {
	case d.overHub && len(d.q.unsent()) > 0:
		return helpLine(relabel(d.keys.Leave, "quit and lose "+itOrThem(len(d.q.unsent()))), stay)
	case d.overHub:
		return helpLine(relabel(d.keys.Leave, "quit"), stay)
	}
	them := itOrThem(d.q.pendingCount())
	denyQuit := relabel(d.keys.DenyQuit, "deny "+them+", quit")
	if d.canLeave {
		return helpLine(denyQuit, relabel(d.keys.Leave, "leave "+them+", quit"), stay)
	}
	return helpLine(denyQuit, stay)
}

func (d *quitDialog) view(int) []string {
	n := d.q.pendingCount()
	them := itOrThem(n)
	lines := []string{d.rule("quit?"), ""}
	lines = append(lines, hanging("  ", plural(n, "ask is", "asks are")+" still waiting for a person.", d.width)...)
	if u := d.q.unsent(); len(u) > 0 { // kept in memory only (decision 0249)
		lines = append(append(lines, ""), hanging("  ", "⚠ "+plural(len(u), "decision is", "decisions are")+
			" not confirmed by the hub yet; quitting now loses "+itOrThem(len(u))+" and the ask stays undecided:", d.width)...)
		for _, w := range u {
			lines = append(lines, hanging("    ", w, d.width)...)
		}
	}
	if d.overHub {
		lines = append(lines, hanging("  ", "L quits; the hub keeps "+them+" for another console.", d.width)...)
	} else {
		lines = append(append(lines, ""), hanging("  D: ", "deny "+them+" as \"permtui exited\" (the children go on at once)", d.width)...)
		if d.canLeave {
			lines = append(lines, hanging("  L: ", "leave "+them+" for the next server (the children keep waiting until "+
				"their timeout; one that watches the heartbeat may give up sooner)", d.width)...)
		}
	}
	return append(lines, "", d.styles.Muted.Render("  "+stayKeys+" (the default); "+yRefused))
}

// The prompt and the refusal of y word the keys the same way.
const (
	stayKeys = "esc, q, n or enter stays"
	yRefused = "y does not quit here"
)

func itOrThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
