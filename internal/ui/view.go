package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

const labelWidth = 9

// View renders the whole screen: header, the body of the current mode,
// status line and help. Every line is cut to the terminal width so nothing
// wraps and the layout holds at any size.
func (m *Model) View() string {
	header := m.headerLines()
	footer := []string{m.statusLine()}
	helpLines := strings.Split(m.help.View(m.helpKeys()), "\n")
	if len(header)+1+len(helpLines)+1 > m.height {
		// Too short for the full help: the one-line help, rather than none.
		short := m.help
		short.ShowAll = false
		helpLines = []string{short.View(m.helpKeys())}
	}
	footer = append(footer, helpLines...)
	bodyHeight := max(m.height-len(header)-len(footer), 1)

	var body []string
	switch m.mode {
	case modeScope:
		body = m.scopeBody()
	case modeReason:
		body = m.reasonBody(bodyHeight)
	case modeView, modeLog:
		body = m.pagerBody()
	case modeGrants:
		body = m.grantsBody()
	case modeQuit:
		body = m.quitBody()
	default:
		body = m.queueBody(bodyHeight)
	}
	body = fitLines(body, bodyHeight)

	lines := append(append(header, body...), footer...)
	lines = lines[:min(len(lines), max(m.height, 1))]
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(lines, "\n")
}

func (m *Model) helpKeys() help.KeyMap {
	k := m.keys
	switch m.mode {
	case modeScope:
		return k.overlayHelp(k.Up, k.Down, k.Confirm)
	case modeReason:
		return k.overlayHelp(k.Confirm)
	case modeView, modeLog:
		page := key.NewBinding(key.WithKeys("pgdown", "pgup"), key.WithHelp("pgdn/pgup", "page"))
		return k.overlayHelp(k.Up, k.Down, page)
	case modeGrants:
		return k.overlayHelp(k.Up, k.Down, k.Revoke)
	case modeQuit:
		return k.overlayHelp(k.Quit)
	}
	return k.queueHelp(m.width)
}

func (m *Model) headerLines() []string {
	s := m.styles
	counts := []string{
		s.Title.Render("permtui"),
		itoa(m.pendingCount()) + " pending",
		s.Approved.Render("✓ " + itoa(m.autoApproved) + " auto-approved"),
		s.Denied.Render("✗ " + itoa(m.autoDenied) + " auto-denied"),
	}
	if m.expired > 0 {
		counts = append(counts, "⌛ "+itoa(m.expired)+" expired")
	}
	if m.invalid > 0 {
		counts = append(counts, s.Warning.Render("⚠ "+itoa(m.invalid)+" invalid"))
	}
	lines := flow(counts, m.width)

	serving, elsewhere := m.servedIDs()
	var sessions []string
	if len(serving) == 0 {
		sessions = append(sessions, s.Warning.Render("serving: none yet"))
	}
	for _, id := range serving {
		sessions = append(sessions, "serving ♥ "+Sanitize(id))
	}
	for _, id := range elsewhere {
		// Another node (usually the root pi itself) answers this session.
		sessions = append(sessions, s.Warning.Render(fmt.Sprintf("⚠ pid %d serves %s, not permtui", m.sessions[id].pid, Sanitize(id))))
	}
	lines = append(lines, flow(sessions, m.width)...)

	switch {
	case !m.policyLoaded:
		lines = append(lines, s.Muted.Render("policy: not loaded yet"))
	case len(m.policyProblems) == 0:
		lines = append(lines, "policy ✓ loaded")
	default:
		// The count and where to read them come first: the text may be cut.
		lines = append(lines, s.Warning.Render(fmt.Sprintf("policy ⚠ %s (l: log): %s", plural(len(m.policyProblems), "problem"),
			Sanitize(m.policyProblems[0]))))
	}
	return lines
}

func (m *Model) statusLine() string {
	if m.status == "" || m.opts.Now().Sub(m.statusAt) > statusTTL {
		return ""
	}
	return m.styles.Status.Render("» " + m.status)
}

func (m *Model) rule(title string) string {
	title = "── " + title + " "
	return m.styles.Rule.Render(title + strings.Repeat("─", max(m.width-ansi.StringWidth(title), 0)))
}

// queueBody is the queue (at most a third of the body, scrolled to keep the
// highlighted ask in view) over the detail of the highlighted ask.
func (m *Model) queueBody(height int) []string {
	if len(m.queue) == 0 {
		return []string{
			m.rule("queue"),
			"",
			"  No asks waiting for you.",
			m.styles.Muted.Render("  Automatic answers are counted above and listed in the log (l)."),
		}
	}
	visible := min(len(m.queue), max(3, height/3))
	cur := max(m.index(m.highlight), 0)
	first := min(max(cur-visible+1, 0), len(m.queue)-visible)
	title := "queue"
	if visible < len(m.queue) {
		title = fmt.Sprintf("queue %d–%d of %d", first+1, first+visible, len(m.queue))
	}
	if n := m.selectedCount(); n > 0 {
		title += fmt.Sprintf(" · %d selected: y n r act on them", n)
	}
	cols := m.columns()
	lines := []string{m.rule(title), m.styles.Muted.Render(cols.row("  ", "   ", "agent", "surface", "value", "age", "left"))}
	for _, e := range m.queue[first : first+visible] {
		lines = append(lines, m.queueRow(e, cols))
	}

	e := m.current()
	pos := fmt.Sprintf("ask %d of %d", cur+1, len(m.queue))
	if m.cursorShifted {
		pos += " · ⚠ new ask under the highlight"
	}
	lines = append(lines, m.rule(pos))
	room := height - len(lines)
	fields := detailFields(e)
	detail := m.renderFields(fields, true, 0)
	if len(detail) > room {
		// Values stay whole (up to a few lines); explanations get one line.
		detail = m.renderFields(fields, false, maxFactLines)
	}
	if len(detail) > room {
		detail = append(detail[:max(room-1, 0)], m.styles.Muted.Render(
			fmt.Sprintf("… %d more lines: v shows everything", len(detail)-room+1)))
	}
	return append(lines, detail...)
}

// maxFactLines caps how many lines one value takes on the queue screen.
const maxFactLines = 3

func (m *Model) selectedCount() int {
	n := 0
	for _, e := range m.queue {
		if e.selected {
			n++
		}
	}
	return n
}

// queueColumns are the widths of the queue's columns at the current size.
type queueColumns struct{ agent, surface, value, age int }

const leftW = 7 // "expired", "sending", "8:25"

// columns fits agent and surface to the longest in the queue and gives the
// value at least half of what is left; below 70 columns the age goes.
func (m *Model) columns() queueColumns {
	c := queueColumns{agent: len("agent"), surface: len("surface"), age: 6}
	if m.width < 70 {
		c.age = 0
	}
	for _, e := range m.queue {
		c.agent = max(c.agent, ansi.StringWidth(Sanitize(agentOf(e.ask.Request))))
		c.surface = max(c.surface, ansi.StringWidth(Sanitize(surfaceOf(e.ask.Request))))
	}
	c.agent, c.surface = min(c.agent, 16), min(c.surface, 24)
	rest := m.width - 2 - 3 - 1 - 1 - 1 - 1 - leftW
	if c.age > 0 {
		rest -= c.age + 1
	}
	budget := rest - max(rest/2, 16)
	for c.agent+c.surface > budget && (c.agent > 6 || c.surface > 8) {
		if c.surface >= c.agent && c.surface > 8 || c.agent <= 6 {
			c.surface--
		} else {
			c.agent--
		}
	}
	c.value = max(rest-c.agent-c.surface, 8)
	return c
}

func (c queueColumns) row(cursor, sel, agent, surface, value, age, left string) string {
	line := cursor + sel + " " + pad(agent, c.agent) + " " + pad(surface, c.surface) + " " + pad(value, c.value)
	if c.age > 0 {
		line += " " + padLeft(age, c.age)
	}
	return line + " " + padLeft(left, leftW)
}

func (m *Model) queueRow(e *entry, cols queueColumns) string {
	r := e.ask.Request
	now := m.opts.Now()
	created := createdAt(e.ask)
	cursor, sel := "  ", "[ ]"
	if e.ask.ID == m.highlight {
		cursor = "▸ "
	}
	if e.selected {
		sel = "[•]"
	}
	left := countdown(created.Add(m.opts.Timeout).Sub(now))
	switch e.state {
	case stateExpired:
		sel, left = "[-]", "expired"
	case stateSending:
		left = "sending"
	}
	value, keepEnd := rowValue(r)
	mark := ""
	if floored(r.AccessIntent) {
		mark = "⚠ " // the child's parser forced this ask
	}
	if w := cols.value - ansi.StringWidth(mark); keepEnd && ansi.StringWidth(value) > w {
		value = ansi.TruncateLeft(value, ansi.StringWidth(value)-w+1, "…")
	}
	line := cols.row(cursor, sel, Sanitize(agentOf(r)), Sanitize(surfaceOf(r)), mark+value,
		age(now.Sub(created)), left)
	switch {
	case e.state == stateExpired:
		return m.styles.Expired.Render(line)
	case e.ask.ID == m.highlight:
		return m.styles.Cursor.Render(line)
	}
	return line
}

// renderFields lays fields out as label and text. Values (commands, paths)
// wrap at the exact cell so their spacing shows as it is, up to factLines
// lines (0: all); prose wraps at words when wrapProse, else takes one
// truncated line.
func (m *Model) renderFields(fields []field, wrapProse bool, factLines int) []string {
	s := m.styles
	textWidth := max(m.width-labelWidth-1, 10)
	var out []string
	for _, f := range fields {
		if f.kind == kindHeading {
			for _, c := range wrapWords(f.text, m.width) {
				out = append(out, s.Label.Render(c))
			}
			continue
		}
		style := s.Value
		switch f.kind {
		case kindBoundary:
			style = s.Boundary
		case kindWarning:
			style = s.Warning
		case kindAnnotation:
			style = s.Annotation
		case kindMuted:
			style = s.Muted
		}
		var chunks []string
		switch {
		case f.prose() && wrapProse:
			chunks = wrapWords(f.text, textWidth)
		case f.prose():
			chunks = []string{ansi.Truncate(f.text, textWidth, "…")}
		default:
			chunks = strings.Split(ansi.Hardwrap(f.text, textWidth, true), "\n")
			if factLines > 0 && len(chunks) > factLines {
				chunks = chunks[:factLines]
				chunks[factLines-1] = ansi.Truncate(chunks[factLines-1], textWidth-1, "") + "…"
			}
		}
		for i, c := range chunks {
			label := ""
			if i == 0 {
				label = f.label
			}
			out = append(out, s.Label.Render(pad(label, labelWidth))+" "+style.Render(c))
		}
	}
	return out
}

func (m *Model) scopeBody() []string {
	s := m.styles
	lines := []string{m.rule("approve for session")}
	e := m.find(m.scope.ask)
	if e == nil {
		return lines
	}
	r := e.ask.Request
	lines = append(lines, "  "+Sanitize(agentOf(r))+" asks for "+Sanitize(surfaceOf(r))+":")
	lines = append(lines, m.indented(Sanitize(shortValue(r)), 4, maxFactLines)...)
	lines = append(lines, s.Muted.Render("  whole session = every subagent of root "+Sanitize(e.ask.Session)), "")
	for i, o := range m.scope.options {
		mark, style := "  ( ) ", s.Value
		if i == m.scope.chosen {
			mark, style = "▸ (•) ", s.Option
		}
		lines = append(lines, style.Render(mark+o.title)+s.Muted.Render(" — "+o.recorder+":"))
		if o.grants == nil {
			lines = append(lines, "        "+grantsText(nil))
		}
		for _, g := range o.grants {
			lines = append(lines, m.indented(pad(Sanitize(g.Surface), 24)+" "+Sanitize(g.Pattern), 8, 0)...)
		}
	}
	if m.scope.note != "" {
		lines = append(lines, "", s.Muted.Render(m.scope.note))
	}
	return append(lines, "", s.Muted.Render("enter approves with the marked scope; esc cancels and decides nothing"))
}

// indented hard-wraps a value under an indent, so a pattern or command is
// shown whole (up to maxLines lines; 0: all).
func (m *Model) indented(text string, indent, maxLines int) []string {
	width := max(m.width-indent, 10)
	chunks := strings.Split(ansi.Hardwrap(text, width, true), "\n")
	if maxLines > 0 && len(chunks) > maxLines {
		chunks = chunks[:maxLines]
		chunks[maxLines-1] = ansi.Truncate(chunks[maxLines-1], width-1, "") + "…"
	}
	for i, c := range chunks {
		chunks[i] = strings.Repeat(" ", indent) + c
	}
	return chunks
}

func (m *Model) reasonBody(height int) []string {
	lines := []string{
		m.rule("deny with reason: " + m.describe(m.reasonFor)),
		m.reason.View(),
		m.styles.Muted.Render("the agent sees this reason; enter denies, esc cancels and decides nothing"),
	}
	if len(m.reasonFor) == 1 {
		if e := m.find(m.reasonFor[0]); e != nil {
			lines = append(lines, m.rule("the ask"))
			lines = append(lines, m.renderFields(detailFields(e), false, maxFactLines)...)
		}
	} else {
		lines = append(lines, m.rule("the asks"))
		for _, k := range m.reasonFor {
			if e := m.find(k); e != nil {
				lines = append(lines, "  "+askLabel(e.ask))
			}
		}
	}
	return fitLines(lines, height)
}

func (m *Model) grantsBody() []string {
	s := m.styles
	lines := []string{m.rule("whole-session grants"),
		s.Muted.Render("permtui approves every later ask of the session that one of these covers."),
		s.Muted.Render("Grants for a single subagent are kept by that child and are not listed.")}
	rows := m.grantRows()
	if len(rows) == 0 {
		return append(lines, "", "  No whole-session grants.")
	}
	session := ""
	for i, r := range rows {
		if r.session != session {
			session = r.session
			lines = append(lines, "", "session "+Sanitize(session))
		}
		mark := "  "
		if i == m.grantCursor {
			mark = "▸ "
		}
		line := mark + pad(Sanitize(r.grant.Surface), 24) + " " + Sanitize(r.grant.Pattern)
		if i == m.grantCursor {
			line = s.Cursor.Render(line)
		}
		lines = append(lines, line)
	}
	return lines
}

func (m *Model) quitBody() []string {
	return []string{
		m.rule("quit?"),
		"",
		fmt.Sprintf("  %s still waiting for a person.", plural(m.pendingCount(), "ask is", "asks are")),
		fmt.Sprintf("  Quit anyway? permtui then denies %s as \"permtui exited\".", map[bool]string{true: "it", false: "them"}[m.pendingCount() == 1]),
		"",
		m.styles.Muted.Render("  q or y quits; esc or n stays"),
	}
}

// openPager shows the full detail of the highlighted ask or the decision
// log in a scrollable viewport.
func (m *Model) openPager(md mode) {
	if md == modeView {
		e := m.current()
		if e == nil {
			m.setStatus("nothing to show")
			return
		}
		m.viewID = e.ask.ID
	}
	m.mode = md
	m.refreshPager()
	if md == modeLog {
		m.pager.GotoBottom()
	} else {
		m.pager.GotoTop()
	}
}

func (m *Model) pagerBody() []string {
	title := "decision log"
	if m.mode == modeView {
		title = "full view"
	}
	// Say where the page is, so nobody takes the last visible line for the end.
	if total, shown := m.pager.TotalLineCount(), m.pager.VisibleLineCount(); total > shown {
		title += fmt.Sprintf(" · lines %d–%d of %d", m.pager.YOffset+1, m.pager.YOffset+shown, total)
	}
	return append([]string{m.rule(title)}, strings.Split(m.pager.View(), "\n")...)
}

// refreshPager sizes the viewport to the body and refills it.
func (m *Model) refreshPager() {
	header := len(m.headerLines())
	m.pager.Width = m.width
	m.pager.Height = max(m.height-header-3, 1) // rule above, status and help below
	switch m.mode {
	case modeView:
		if e := m.find(m.viewID); e != nil {
			m.pager.SetContent(strings.Join(m.renderFields(detailFields(e), true, 0), "\n"))
		}
	case modeLog:
		m.pager.SetContent(strings.Join(m.logLines(), "\n"))
	}
}

// logEntry is one entry of the decision log: a written response, or a note
// (starting with its glyph) about a rejected request, a failed write or a
// revoked grant.
type logEntry struct {
	at       time.Time
	ask      serve.Ask
	response wire.Response
	auto     bool
	latency  time.Duration
	choice   string // the session scope a person chose, with its grants
	note     string
}

// logIndent lines continuation lines up under the text after the time.
const logIndent = "         "

// logLines shows each decision as what happened to which ask, then on its
// own line who or what decided, with the reason or the grants recorded.
func (m *Model) logLines() []string {
	if len(m.log) == 0 {
		return []string{"", "  No decisions yet."}
	}
	var out []string
	for _, l := range m.log {
		stamp := l.at.Format("15:04:05") + " "
		if l.note != "" {
			out = append(out, m.logWrap(stamp, l.note)...)
			continue
		}
		out = append(out, m.logWrap(stamp, m.stateWords(l.response)+"  "+askLabel(l.ask))...)
		by := "by " + decidedBy(l.response.DecidedBy, l.auto)
		if l.choice != "" {
			by += " · " + l.choice
		}
		if reason := l.response.DenialReason; reason != "" {
			by += " · reason: " + Sanitize(reason)
		}
		out = append(out, m.logWrap(logIndent, by)...)
	}
	return out
}

// logWrap wraps text after a first-line prefix, continuing under it.
func (m *Model) logWrap(prefix, text string) []string {
	lines := wrapWords(text, max(m.width-len(logIndent), 10))
	for i := range lines {
		if i == 0 {
			lines[i] = prefix + lines[i]
		} else {
			lines[i] = logIndent + lines[i]
		}
	}
	return lines
}

// stateWords says the outcome in words and a glyph, never by colour alone.
func (m *Model) stateWords(r wire.Response) string {
	switch r.State {
	case wire.StateApprovedForSession:
		return m.styles.Approved.Render("✓ approved for session")
	}
	if r.Approved {
		return m.styles.Approved.Render("✓ approved")
	}
	return m.styles.Denied.Render("✗ denied")
}

// decidedBy names the rule or person behind a response.
func decidedBy(ds *wire.DecisionSource, auto bool) string {
	if ds == nil {
		if auto {
			return "recorded policy"
		}
		return "you"
	}
	switch ds.Kind {
	case wire.DecidedByUser:
		return "you"
	case wire.DecidedByRule:
		origin := deref(ds.Origin)
		if origin == "session" {
			return "session grant " + Sanitize(ds.Surface) + " " + Sanitize(deref(ds.Pattern))
		}
		return "rule (" + Sanitize(origin) + ") " + Sanitize(ds.Surface) + ": " + Sanitize(deref(ds.Pattern))
	}
	s := Sanitize(ds.Kind)
	if ds.Reason != nil {
		s += ": " + Sanitize(*ds.Reason)
	}
	return s
}

// createdAt is when the child built the request; the arrival time stands in
// when the child's clock value is unusable.
func createdAt(a serve.Ask) time.Time {
	if ms := a.Request.CreatedAt; ms > 0 && ms < 1e15 {
		return time.UnixMilli(int64(ms))
	}
	return a.At
}

func age(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// countdown is the time left before the child gives up.
func countdown(d time.Duration) string {
	if d <= 0 {
		return "due"
	}
	d = d.Truncate(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// flow packs segments into as few lines as fit the width, " · " between.
func flow(segments []string, width int) []string {
	var lines []string
	cur := ""
	for _, seg := range segments {
		switch {
		case cur == "":
			cur = seg
		case ansi.StringWidth(cur)+3+ansi.StringWidth(seg) <= width:
			cur += " · " + seg
		default:
			lines = append(lines, cur)
			cur = seg
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// fitLines pads or cuts to exactly height lines.
func fitLines(lines []string, height int) []string {
	if len(lines) > height {
		return lines[:height]
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}

// pad cuts or fills s to exactly w cells.
func pad(s string, w int) string {
	s = ansi.Truncate(s, w, "…")
	return s + strings.Repeat(" ", max(w-ansi.StringWidth(s), 0))
}

func padLeft(s string, w int) string {
	s = ansi.Truncate(s, w, "…")
	return strings.Repeat(" ", max(w-ansi.StringWidth(s), 0)) + s
}

func truncate(s string, w int) string { return ansi.Truncate(s, w, "…") }

// wrapWords wraps at spaces only: ansi.Wrap also breaks after every hyphen,
// which splits a path or flag (app-wt-7, -rf) as if it were two words. A word
// longer than the line is cut at the cell.
func wrapWords(text string, width int) []string {
	var lines []string
	cur := ""
	for i, w := range strings.Split(text, " ") {
		switch {
		case i == 0:
			cur = w
		case ansi.StringWidth(cur)+1+ansi.StringWidth(w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
		for ansi.StringWidth(cur) > width {
			lines = append(lines, ansi.Truncate(cur, width, ""))
			cur = ansi.TruncateLeft(cur, width, "")
		}
	}
	return append(lines, cur)
}
