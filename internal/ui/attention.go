package ui

import (
	"io"

	tea "github.com/charmbracelet/bubbletea"
)

// attentionCmd rings the bell and raises a desktop notification for a new
// ask. The notification says only how many asks wait: request text is
// untrusted and may be private, so it never leaves the console.
func (m *Model) attentionCmd(pending int) tea.Cmd {
	seq := attentionSequence(m.opts.Bell, m.opts.Notify, pending)
	if seq == "" {
		return nil
	}
	w := m.opts.Attention
	return func() tea.Msg {
		_, _ = io.WriteString(w, seq) // best effort: a lost bell must not stop the console
		return nil
	}
}

// attentionSequence is BEL, then OSC 9 (iTerm2, Windows Terminal, WezTerm,
// kitty, ghostty) and OSC 777 (rxvt, foot, ghostty) notifications.
func attentionSequence(bell, notify bool, pending int) string {
	seq := ""
	if bell {
		seq += "\a"
	}
	if notify {
		text := "permtui: " + plural(pending, "ask") + " pending"
		seq += "\x1b]9;" + text + "\x07" + "\x1b]777;notify;permtui;" + plural(pending, "ask") + " pending\x07"
	}
	return seq
}

// titleCmd keeps the window title at the pending count; it sends only when
// the count changed.
func (m *Model) titleCmd() tea.Cmd {
	n := m.pendingCount()
	if n == m.titleCount {
		return nil
	}
	m.titleCount = n
	return tea.SetWindowTitle("permtui: " + plural(n, "ask") + " pending")
}
