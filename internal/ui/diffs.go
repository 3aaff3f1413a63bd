package ui

import (
	"fmt"
	"os"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/preview"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
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
// none says the ask's payload held no change to preview. stamp is the
// file's FileStamp taken before the read.
type previewMsg struct {
	ask   serve.AskID
	diff  preview.Diff
	none  bool
	stamp string
}

// stampsMsg carries the stamps of the files of write and edit asks, taken
// in a command: the highlighted ask's on a tick, or those an approving
// decision answers when it was made. then is that decision, carried out
// once every file is as its diff was read (decision 0187).
type stampsMsg struct {
	stamps []askStamp
	then   *approval
}

type askStamp struct {
	ask         serve.AskID
	path, stamp string
}

// approval is an approving decision, confirmed, held while the files of the
// asks it answers are stamped: decisions for targets (also: the other
// waiting asks a whole-session grant answers), or an allow rule that
// decides targets.
type approval struct {
	targets, also []serve.AskID
	d             serve.Decision
	rule          *writeRuleAction
}

// statStamp is a file's size and modification time, or the error.
func statStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
}

// stampCmd checks, on a tick, whether the highlighted ask's file changed
// since its diff was read.
func (m *Model) stampCmd() tea.Cmd {
	if e := m.current(); e != nil && e.state == statePending {
		return m.stampsCmd([]serve.AskID{e.ask.ID}, nil)
	}
	return nil
}

// stampsCmd stamps, in a command, the files of the asks among ids whose
// diff is kept and was read here (a file on another host is not stamped);
// nil when there are none: then has nothing to wait for. The path is the
// kept diff's, so no request is parsed again.
func (m *Model) stampsCmd(ids []serve.AskID, then *approval) tea.Cmd {
	var stamps []askStamp
	for _, id := range ids {
		if e := m.find(id); e != nil && e.diffState == diffKept && e.ask.Host == "" {
			stamps = append(stamps, askStamp{ask: id, path: e.diff.Path})
		}
	}
	if len(stamps) == 0 {
		return nil
	}
	stamp := m.opts.FileStamp
	return func() tea.Msg {
		for i := range stamps {
			stamps[i].stamp = stamp(stamps[i].path)
		}
		return stampsMsg{stamps: stamps, then: then}
	}
}

// applyStamps marks a diff stale when its file changed, and reads it again
// first; the stale diff stays shown, marked, until the new one replaces it.
// An approval waiting for the stamps is refused, naming the asks whose
// files changed, or else carried out.
func (m *Model) applyStamps(msg stampsMsg) tea.Cmd {
	var changed []string
	var reads []tea.Cmd
	for _, s := range msg.stamps {
		e := m.find(s.ask)
		if e == nil || e.state != statePending || e.diffState != diffKept || s.stamp == e.diffStamp {
			continue
		}
		e.diffStale = true
		changed = append(changed, label(e))
		reads = append(reads, m.readFirst(e))
	}
	if a := msg.then; a != nil {
		if len(changed) > 0 {
			reads = append(reads, m.refuseApproval(*a, changedStatus(changed)))
		} else {
			reads = append(reads, m.carryOut(*a))
		}
	}
	return tea.Batch(reads...)
}

// changedStatus names the asks whose files changed since their diffs were
// read (at most five, then a count).
func changedStatus(labels []string) string {
	names := strings.Join(labels[:min(len(labels), 5)], ", ")
	if len(labels) > 5 {
		names += " and " + itoa(len(labels)-5) + " more"
	}
	if len(labels) == 1 {
		return "⚠ the file of " + names + " changed after its diff was read; it is being read again: look at it, then approve"
	}
	return "⚠ the files of " + names + " changed after their diffs were read; they are being read again: look at them, then approve"
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
	for !m.diffReads.Full() && len(m.diffQueue) > 0 {
		e := m.find(m.diffQueue[0])
		m.diffQueue = m.diffQueue[1:]
		switch {
		case e == nil || e.diffState != diffWaiting:
		case m.diffs.Full() && e.ask.ID != m.highlight:
			m.dropDiff(e) // a stale diff waiting to be read again goes too
			e.diffState = diffDropped
		default:
			e.diffState = diffReading
			m.diffReads.Add(1, 0)
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
	e.diffLate = true
	return m.readFirst(e)
}

// readFirst puts an ask's read before every other waiting one.
func (m *Model) readFirst(e *entry) tea.Cmd {
	e.diffState = diffWaiting
	m.diffQueue = slices.Insert(m.diffQueue, 0, e.ask.ID)
	return m.startReads()
}

// previewCmd finds the change a write or edit ask would make, reads the
// file and computes the diff, in a command: Update never reads a file.
func (m *Model) previewCmd(a serve.Ask) tea.Cmd {
	read, stamp := m.opts.ReadFile, m.opts.FileStamp
	return func() tea.Msg {
		c, ok := preview.ChangeOf(a.Request)
		if !ok {
			return previewMsg{ask: a.ID, none: true}
		}
		var st string
		if a.Host == "" { // a file on another host is not read here
			st = stamp(c.Path) // before the read: a change meanwhile is seen on the next tick
		}
		data, err := preview.ReadFor(a.Host, c.Path, read)
		return previewMsg{ask: a.ID, diff: preview.Compute(c, data, err), stamp: st}
	}
}

// applyPreview keeps a diff that fits the budget, or the highlighted ask's
// diff after dropping others' (the latest asks' first) to make room. A read
// for an ask that left the queue or expired meanwhile is let go.
func (m *Model) applyPreview(msg previewMsg) tea.Cmd {
	m.diffReads.Release(0)
	e := m.find(msg.ask)
	switch {
	case e == nil || e.diffState != diffReading:
	case msg.none:
		e.diffState = diffNone
	default:
		if e.diff != nil { // read again after the file changed: the stale one goes
			m.dropDiff(e)
			e.diffReread = true
		}
		size := int64(msg.diff.Size())
		if e.ask.ID == m.highlight {
			for i := len(m.queue) - 1; i >= 0 && !m.diffs.Fits(1, size); i-- {
				if o := m.queue[i]; o != e && o.diffState == diffKept {
					m.dropDiff(o)
				}
			}
			m.diffs.Add(1, size) // kept even beyond the budget
		} else if !m.diffs.Reserve(size) {
			e.diffState = diffDropped
			break
		}
		e.diff, e.diffState, e.diffStamp = &msg.diff, diffKept, msg.stamp
		if e.diffLate || e.diffReread {
			e.diffRead = m.opts.Now()
		}
		e.diffStale, e.seen, e.seenAll = false, nil, false
		if m.mode == modeView {
			m.sizePager(true)
			if m.pager.ask == e.ask.ID {
				// A full view at its end must not count the new diff, which
				// follows the path near the top, as seen.
				m.pager.vp.GotoTop()
			}
		}
	}
	return m.startReads()
}

// dropDiff lets an ask's diff go; it is read again when the ask is shown.
func (m *Model) dropDiff(e *entry) {
	if e.diff != nil {
		m.diffs.Release(int64(e.diff.Size()))
		e.diff, e.diffState, e.diffStale = nil, diffDropped, false
	}
}

// noteChangeSeen records which must fields (decision 0159) of the ask on
// screen are on it whole: in the queue's detail, or in the window of the
// full view. Approvals wait until every one has been (decision 0154).
func (m *Model) noteChangeSeen() {
	var e *entry
	var shown []int
	total := 0
	switch m.mode {
	case modeQueue:
		if e = m.current(); e == nil || e.seenAll || e.diffStale || diffUnread(e) {
			return
		}
		if e.diff != nil && len(e.diff.Lines) > m.height || cutInDetail(e.ask.Request, m.width) {
			return // the detail cannot show it whole; its lines are counted in the full view
		}
		_, _, height := m.frame()
		l := m.queueLayout(height)
		shown, total = l.shown, l.must
	case modeView:
		if e = m.find(m.pager.ask); e == nil || e.seenAll || e.diffStale || diffUnread(e) {
			return
		}
		_, _, height := m.frame() // the body: the rule, then the window
		top := m.pager.vp.YOffset
		shown = m.pager.noteViewed(top, top+min(m.pager.vp.VisibleLineCount(), height-1))
		if len(m.pager.owner) > 0 {
			total = slices.Max(m.pager.owner) // the full view cuts nothing
		}
	default:
		return
	}
	for _, k := range shown {
		for len(e.seen) < k {
			e.seen = append(e.seen, false)
		}
		e.seen[k-1] = true
	}
	e.seenAll = len(e.seen) >= total && !slices.Contains(e.seen[:total], false)
}

// cutInDetail reports, without laying the detail out, that one of the
// request's values is too long for the detail's few lines of a value (a
// cell takes at most 4 bytes), so the layout need not be computed again on
// every update to find it cut.
func cutInDetail(r *wire.Request, width int) bool {
	long := func(s string) bool { return len(s) > 4*maxFactLines*width }
	if long(deref(r.Value)) || long(fullCommand(r)) || r.Payload != nil && long(r.Payload.Request.Value) {
		return true
	}
	ai := r.AccessIntent
	return ai != nil && (slices.ContainsFunc(ai.MatchValues, long) ||
		slices.ContainsFunc(ai.AskingUnits, func(u wire.AskingUnit) bool { return long(u.Command) }))
}

// unseenLines are the lines of e's full view, at this width, showing a must
// field not yet seen whole, as ranges "23–126".
func (m *Model) unseenLines(e *entry) []string {
	_, owner := m.renderOwned(m.detailOf(e), true, 0, m.width)
	var ranges []string
	for i := 0; i < len(owner); i++ {
		if k := owner[i]; k <= 0 || k <= len(e.seen) && e.seen[k-1] {
			continue
		}
		j := i
		for j+1 < len(owner) && (owner[j+1] == owner[i] || owner[j+1] > 0 && (owner[j+1] > len(e.seen) || !e.seen[owner[j+1]-1])) {
			j++
		}
		r := itoa(i + 1)
		if j > i {
			r += "–" + itoa(j+1)
		}
		ranges, i = append(ranges, r), j
	}
	return ranges
}

// diffUnread: the ask's change is still to be read, so nothing of it was
// on screen, whatever else of the ask was.
func diffUnread(e *entry) bool {
	return e.diffState == diffWaiting || e.diffState == diffReading || e.diffState == diffDropped
}

// changeUnseen says why an approval of targets must wait: a change stale or
// not read yet, or lines of a change, values or units not yet on screen
// whole. An ask identical to one seen whole (same path and payload, same
// values) counts as seen once its own change was read.
func (m *Model) changeUnseen(targets []serve.AskID) string {
	seen := map[askIdentity]bool{}
	for _, e := range m.queue {
		if e.seenAll {
			seen[e.same] = true
		}
	}
	for _, id := range targets {
		e := m.find(id)
		switch {
		case e == nil:
		case e.diffStale:
			return changedStatus([]string{label(e)})
		case diffUnread(e):
			return "the change of " + label(e) + " has not been shown yet: highlight it to read it; approving waits until it was on screen"
		case seen[e.same]:
		default:
			if r := m.unseenLines(e); len(r) > 0 {
				return unseenStatus(e, r)
			}
		}
	}
	return ""
}

// unseenStatus says which lines of an ask's full view were never on
// screen; approving waits for them.
func unseenStatus(e *entry, ranges []string) string {
	lines, them := "lines ", "them"
	if len(ranges) == 1 && !strings.Contains(ranges[0], "–") {
		lines, them = "line ", "it" // "23", not a range "23–126"
	}
	lines += strings.Join(ranges[:min(len(ranges), 3)], ", ")
	if len(ranges) > 3 {
		lines += " and " + plural(len(ranges)-3, "more range")
	}
	return "not all of " + label(e) + " was on screen: " + lines + " of its full view not seen yet; v shows " + them + " (approving waits until every line was shown)"
}

// alsoUnseen refuses an approving decision that would answer, besides its
// targets, another waiting ask not seen whole, naming it (decision 0159):
// a whole-session grant must not approve what was never on screen.
func (m *Model) alsoUnseen(a decideAction) string {
	if len(a.also) == 0 || len(a.targets) == 0 || !approves(a.d) {
		return ""
	}
	if why := m.changeUnseen(stillPending(m, a.also)); why != "" {
		return "refused: it would also answer an ask not seen whole; look at it first (esc, then highlight it), or e narrows the pattern. " + why
	}
	return ""
}
