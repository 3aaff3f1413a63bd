package ui

import (
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/preview"
	"github.com/permtui/permtui/internal/serve"
)

// The diff previews of write and edit asks (decision 0121). A diff may be
// a few MiB (a 1 MiB file against 1 MiB of new content) and 1,024 asks may
// wait, so the diffs kept over the whole queue are bounded by diffBudget:
// the files are read as the asks arrive, at most maxDiffReads at a time,
// while the budget lasts; an ask whose diff is not kept has its file read
// again when it is highlighted, and the detail says when that was.

const (
	// diffBudget bounds the bytes of the diffs kept (preview.Diff.Size) over
	// the queue; the highlighted ask's diff is kept even beyond it.
	diffBudget = 16 << 20
	// maxDiffReads bounds the reads and diffs computed at once: each holds
	// the current file and the new content (a few MiB at most).
	maxDiffReads = 2
)

// diffState is where an ask's diff preview is.
type diffState uint8

const (
	diffNone    diffState = iota // no write or edit to preview, or it had no usable input
	diffWaiting                  // waits for a read slot
	diffReading                  // a command reads the file
	diffKept                     // entry.diff holds it
	diffDropped                  // not kept (budget); read again when highlighted
)

// previewMsg carries the diff of a write or edit ask, read off the UI loop;
// none says the ask's payload held no change to preview.
type previewMsg struct {
	ask  serve.AskID
	diff preview.Diff
	none bool
}

// wantDiff queues the read of a new ask's diff when it is a write or edit.
func (m *Model) wantDiff(e *entry) tea.Cmd {
	if !preview.Applies(e.ask.Request) {
		return nil
	}
	e.diffState = diffWaiting
	m.diffQueue = append(m.diffQueue, e.ask.ID)
	return m.startReads()
}

// startReads starts the waiting reads while there are free slots. A read
// for an ask other than the highlighted one waits no more once the budget is
// spent: its diff would not be kept.
func (m *Model) startReads() tea.Cmd {
	var cmds []tea.Cmd
	for m.diffReads < maxDiffReads && len(m.diffQueue) > 0 {
		e := m.find(m.diffQueue[0])
		m.diffQueue = m.diffQueue[1:]
		switch {
		case e == nil || e.diffState != diffWaiting:
		case m.diffBytes >= diffBudget && e.ask.ID != m.highlight:
			e.diffState = diffDropped
		default:
			e.diffState = diffReading
			m.diffReads++
			cmds = append(cmds, m.previewCmd(e.ask))
		}
	}
	if len(m.diffQueue) == 0 {
		m.diffQueue = nil // let the backing array go
	}
	return tea.Batch(cmds...)
}

// showDiff asks for the highlighted ask's diff when it was not kept; its
// read goes first.
func (m *Model) showDiff() tea.Cmd {
	e := m.current()
	if e == nil || e.diffState != diffDropped {
		return nil
	}
	e.diffState, e.diffLate = diffWaiting, true
	m.diffQueue = append([]serve.AskID{e.ask.ID}, m.diffQueue...)
	return m.startReads()
}

// previewCmd finds the change a write or edit ask would make, reads the
// file and computes the diff, in a command: Update never reads a file.
func (m *Model) previewCmd(a serve.Ask) tea.Cmd {
	read := m.opts.ReadFile
	return func() tea.Msg {
		c, ok := preview.ChangeOf(a.Request)
		if !ok {
			return previewMsg{ask: a.ID, none: true}
		}
		data, err := read(c.Path)
		return previewMsg{ask: a.ID, diff: preview.Compute(c, data, err)}
	}
}

// applyPreview keeps a diff that fits the budget, or the highlighted ask's
// diff after dropping others' (the latest asks' first) to make room. A read
// for an ask that left the queue or expired meanwhile is let go.
func (m *Model) applyPreview(msg previewMsg) tea.Cmd {
	m.diffReads--
	e := m.find(msg.ask)
	switch {
	case e == nil || e.diffState != diffReading:
	case msg.none:
		e.diffState = diffNone
	default:
		size := msg.diff.Size()
		if e.ask.ID == m.highlight {
			for i := len(m.queue) - 1; i >= 0 && m.diffBytes+size > diffBudget; i-- {
				if o := m.queue[i]; o != e && o.diffState == diffKept {
					m.dropDiff(o)
				}
			}
		}
		if e.ask.ID != m.highlight && m.diffBytes+size > diffBudget {
			e.diffState = diffDropped
			break
		}
		e.diff, e.diffState = &msg.diff, diffKept
		m.diffBytes += size
		if e.diffLate {
			e.diffRead = m.opts.Now()
		}
		if m.mode == modeView {
			m.refreshPager()
		}
	}
	return m.startReads()
}

// dropDiff lets an ask's diff go; it is read again when the ask is shown.
func (m *Model) dropDiff(e *entry) {
	if e.diffState == diffKept {
		m.diffBytes -= e.diff.Size()
		e.diff, e.diffState = nil, diffDropped
	}
}
