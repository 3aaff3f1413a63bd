package ui

import (
	"io"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// attentionCmd rings the bell and raises a desktop notification for a new
// ask: BEL, then OSC 9 (iTerm2, Windows Terminal, WezTerm, kitty, ghostty)
// and OSC 777 (rxvt, foot, ghostty). The notification says only how many
// asks wait: request text is untrusted and may be private, so it never
// leaves the console.
func (m *Model) attentionCmd() tea.Cmd {
	seq := ""
	if m.opts.Bell {
		seq += "\a"
	}
	if m.opts.Notify {
		pending := plural(m.pendingCount(), "ask") + " pending"
		seq += "\x1b]9;permtui: " + pending + "\x07" + "\x1b]777;notify;permtui;" + pending + "\x07"
	}
	if seq == "" {
		return nil
	}
	return m.writeCmd(seq)
}

// titleCmd keeps the window title at the pending count; it writes only when
// the count changed. It goes through the attention writer rather than
// tea.SetWindowTitle, whose v1 implementation writes to the output outside
// the renderer's lock.
func (m *Model) titleCmd() tea.Cmd {
	n := m.pendingCount()
	if n == m.titleCount {
		return nil
	}
	m.titleCount = n
	return m.writeCmd(ansi.SetWindowTitle("permtui: " + plural(n, "ask") + " pending"))
}

// writeCmd writes seq to the attention writer in one Write. It is best
// effort: a lost bell or title must not stop the console.
func (m *Model) writeCmd(seq string) tea.Cmd {
	w := m.opts.Attention
	return func() tea.Msg {
		_, _ = io.WriteString(w, seq)
		return nil
	}
}

// copyCmd puts text on the clipboard with OSC 52, which most terminals
// (and tmux with set-clipboard) honour. It runs only on the person's key
// press; nothing from a request reaches the clipboard otherwise.
func (m *Model) copyCmd(text string) tea.Cmd {
	m.setStatus("copied to the clipboard (OSC 52): " + truncate(text, 50))
	return m.writeCmd(ansi.SetSystemClipboard(text))
}
