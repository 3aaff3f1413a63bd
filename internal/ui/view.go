package ui

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

const labelWidth = 9

// View renders the whole screen: header, the body of the current mode,
// status line and help. Every line is cut to the terminal width so nothing
// wraps and the layout holds at any size.
func (m *Model) View() string {
	header, footer, bodyHeight := m.frame()

	var body []string
	if o := m.active(); o != nil {
		body = o.view(bodyHeight)
	} else {
		body = m.queueLayout(bodyHeight).lines
	}
	body = fitLines(body, bodyHeight)

	lines := append(append(header, body...), footer...)
	lines = lines[:min(len(lines), max(m.height, 1))]
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(lines, "\n")
}

// frame is the screen around the body: header, footer (status and help)
// and the height left for the body between them.
func (m *Model) frame() (header, footer []string, bodyHeight int) {
	header = m.headerLines()
	footer = append(m.selectionLines(), m.statusLines()...)
	helpLines := strings.Split(m.help.View(m.helpKeys()), "\n")
	if len(header)+1+len(helpLines)+1 > m.height {
		// Too short for the full help: the one-line help, rather than none.
		short := m.help
		short.ShowAll = false
		helpLines = []string{short.View(m.helpKeys())}
	}
	footer = append(footer, helpLines...)
	return header, footer, max(m.height-len(header)-len(footer), 1)
}

func (m *Model) helpKeys() help.KeyMap {
	if o := m.active(); o != nil {
		return o.help()
	}
	return m.keys.queueHelp(m.width, m.opts.Rules != nil)
}

// headerLines are the counts, the activity, the sessions served, the policy
// and the session grants and denies in force. At 24 rows or fewer they take
// at most 3 lines, so a dialog keeps its room (decision 0153): the
// per-agent counts go first, then the sessions become one summary line,
// then the latest automatic answer, then the policy line takes its short
// form, then the grants and denies join the counts. The policy line is
// never cut.
func (m *Model) headerLines() []string {
	counts := m.countLines(false)
	activity := m.activityLines()
	sessions := m.sessionLines(false)
	policy := m.withAuthority(m.policyLines(false), false)
	all := func() []string {
		return slices.Concat(counts, activity, sessions, policy)
	}
	join := func() { sessions, policy = joinIfFits(sessions, policy, m.width) }
	steps := []func(){
		func() { activity = activity[:min(len(activity), 1)] },
		func() { sessions = m.sessionLines(true) },
		join,
		func() { activity = nil },
		func() { counts = m.countLines(true) },
		func() {
			policy = m.withAuthority(m.policyLines(true), true)
			join()
		},
		func() {
			// Off the policy's line, onto the counts' line, if it fits there.
			if c, rest := joinIfFits(counts, m.authorityLines(true), m.width); rest == nil {
				counts, sessions, policy = c, m.sessionLines(true), m.policyLines(true)
				join()
			}
		},
	}
	for i := 0; m.height <= 24 && len(all()) > 3 && i < len(steps); i++ {
		steps[i]()
	}
	return all()
}

// joinIfFits puts two one-line parts on one line when it fits the width.
func joinIfFits(a, b []string, width int) ([]string, []string) {
	if len(a) == 1 && len(b) == 1 && ansi.StringWidth(a[0])+3+ansi.StringWidth(b[0]) <= width {
		return []string{a[0] + " · " + b[0]}, nil
	}
	return a, b
}

func (m *Model) countLines(short bool) []string {
	s := m.styles
	counts := []string{
		s.Title.Render("permtui"),
		itoa(m.pendingCount()) + " pending",
		s.Approved.Render("✓ " + itoa(m.auto.approved) + " auto-approved"),
		s.Denied.Render("✗ " + itoa(m.auto.denied) + " auto-denied"),
	}
	if short {
		counts = append(counts[:2], s.Approved.Render("✓"+itoa(m.auto.approved))+" "+s.Denied.Render("✗"+itoa(m.auto.denied))+" auto")
	}
	if m.expired > 0 {
		counts = append(counts, "⌛ "+itoa(m.expired)+" expired")
	}
	if m.invalid > 0 {
		counts = append(counts, s.Warning.Render("⚠ "+itoa(m.invalid)+" invalid"))
	}
	lines := flow(counts, m.width)
	if short {
		return lines[:1]
	}
	return lines
}

// maxListedSessions is how many served sessions the full header names; more
// are counted. A discovering console keeps every session it served while
// it runs, its directory gone or not (decision 0232), so the list only grows.
const maxListedSessions = 3

// sessionLines name the sessions served, those another node serves, and
// what is degraded; short, one summary line with the counts.
func (m *Model) sessionLines(short bool) []string {
	s := m.styles
	serving, elsewhere := m.servedIDs()
	var parts []string
	switch {
	case m.opts.OverHub:
		parts = append(parts, "attached to the hub: the asks of every relay")
	case len(serving) == 0:
		parts = append(parts, s.Warning.Render("serving: none yet"))
	}
	if short || len(serving) > maxListedSessions {
		switch {
		case len(serving) == 1:
			parts = append(parts, "serving ♥ "+Sanitize(serving[0]))
		case len(serving) > 1:
			parts = append(parts, "serving ♥ "+itoa(len(serving))+" sessions")
		}
		serving = nil
	}
	if short {
		if len(elsewhere) > 0 {
			parts = append(parts, s.Warning.Render("⚠ standing by for "+plural(len(elsewhere), "session")))
		}
		if len(m.degraded) > 0 {
			parts = append(parts, s.Warning.Render("⚠ degraded: "+strings.Join(slices.Sorted(maps.Keys(m.degraded)), ", ")+" (l: log)"))
		}
		return []string{strings.Join(parts, " · ")}
	}
	for _, id := range serving {
		parts = append(parts, "serving ♥ "+Sanitize(id))
	}
	for _, id := range elsewhere {
		parts = append(parts, s.Warning.Render("⚠ "+servedBy(m.sessions[id])+" serves "+Sanitize(id)+"; standing by"))
	}
	lines := flow(parts, m.width)
	for _, area := range slices.Sorted(maps.Keys(m.degraded)) {
		lines = append(lines, s.Warning.Render("⚠ "+area+" degraded: "+Sanitize(m.degraded[area])))
	}
	return lines
}

// policyLines say whether the policy loaded. A problem is never cut: it
// wraps over up to three lines, or (short, or longer) gives way to the count
// and where to read it.
func (m *Model) policyLines(short bool) []string {
	s := m.styles
	switch {
	case m.opts.OverHub && !m.policyLoaded:
		// Over a hub each relay judges with its own policy and reports
		// nothing here (docs/hub.md).
		return []string{s.Muted.Render("policy: each relay's own")}
	case !m.policyLoaded:
		return []string{s.Muted.Render("policy: not loaded yet")}
	case len(m.policy.Problems) == 0 && m.policy.NoFile != "":
		// Two lines, so where it looked shows: a mistyped --agent-dir.
		wrapped := wrapWords("policy ⚠ "+Sanitize(m.policy.NoFile), m.width)
		if short || len(wrapped) > 2 {
			return styled(s.Warning, []string{"policy ⚠ no policy file (l: log says where it looked)"})
		}
		return styled(s.Warning, wrapped)
	case len(m.policy.Problems) == 0:
		a, b := joinIfFits([]string{"policy ✓ loaded"}, m.projectPart(short), m.width)
		return append(a, b...)
	}
	held := ""
	if m.policy.NoAutoAllow {
		held = ", nothing auto-allowed"
	}
	if p := m.projectPart(true); p != nil {
		held += " · " + p[0]
	}
	head := "policy ⚠ " + plural(len(m.policy.Problems), "problem") + held + " (l: log)"
	wrapped := wrapWords(head+": "+Sanitize(m.policy.Problems[0]), m.width)
	if limit := map[bool]int{true: 1, false: 3}[short]; len(wrapped) > limit {
		wrapped = wrapWords(head, m.width)
	}
	return styled(s.Warning, wrapped)
}

// projectPart says whether a project policy is in force and whether its
// allows are held for a person (decision 0206); nil when none is.
func (m *Model) projectPart(short bool) []string {
	switch {
	case len(m.policy.ProjectFiles) == 0:
		return nil
	case m.policy.ProjectAllowsHeld && short:
		return []string{"project allows held"}
	case m.policy.ProjectAllowsHeld:
		return []string{"project policy in force, project allows held (not trusted)"}
	case short:
		return []string{"project trusted"}
	}
	return []string{"project policy in force, project trusted"}
}

// withAuthority puts the session grants and denies in force beside the
// policy, on its line when it fits.
func (m *Model) withAuthority(policy []string, short bool) []string {
	authority := m.authorityLines(short)
	if len(policy) != 1 {
		return append(policy, authority...)
	}
	a, b := joinIfFits(policy, authority, m.width)
	return append(a, b...)
}

// authorityLines count the whole-session grants and session denies in
// force, restored at start or recorded since: they change what is decided
// beyond the policy and outlive the run (finding F14); p lists them.
func (m *Model) authorityLines(short bool) []string {
	// A local console's grants store may hold other sessions' too, which do
	// not apply here; at a hub every relay's count.
	grants, denies := m.grantList.counts(func(session string) bool { return m.opts.OverHub || m.sessions[session].serving })
	var parts []string
	switch {
	case grants > 0 && short:
		parts = append(parts, plural(grants, "session grant"))
	case grants > 0:
		parts = append(parts, plural(grants, "whole-session grant")+" in force")
	}
	switch {
	case denies > 0 && short && grants > 0:
		parts = append(parts, plural(denies, "deny", "denies"))
	case denies > 0:
		parts = append(parts, plural(denies, "session deny", "session denies"))
	}
	if parts == nil {
		return nil
	}
	return []string{strings.Join(parts, ", ") + " (p)"}
}

// projectNote is the log's line for a project policy in force: its files,
// and whether its allows are held.
func projectNote(ev serve.PolicyStatus) string {
	files := make([]string, len(ev.ProjectFiles))
	for i, f := range ev.ProjectFiles {
		files[i] = strconv.Quote(Sanitize(f))
	}
	note := "policy: the project's files are in force: " + strings.Join(files, ", ")
	if ev.ProjectAllowsHeld {
		return note + "; the project is not trusted, so an allow only they give goes to a person (pass --trust-project to trust it)"
	}
	return note + "; the project is trusted (--trust-project)"
}

// servedBy names the other node that answers a session: another permtui
// (it holds the session's lock), or usually the root pi itself.
func servedBy(st sessionState) string {
	who := "pi"
	if st.permtui {
		who = "another permtui"
	}
	if st.pid != 0 {
		who += fmt.Sprintf(" (pid %d)", st.pid)
	}
	return who
}

// activityLines make automatic answers visible: the latest (what, for
// whom, by which rule or grant, how long ago) and the counts per agent.
// Nothing shows until policy has answered something.
func (m *Model) activityLines() []string {
	l := m.lastAuto
	if l == nil {
		return nil
	}
	s := m.styles
	// Who and by which rule first: the value is the part that may be cut.
	latest := "last auto, " + age(m.opts.Now().Sub(l.at)) + " ago: " + m.stateWords(l.outcome) + " " +
		l.agent + " by " + l.by + " · " + l.surface + " " + l.value
	var per []string
	counted := func(name string, c autoCount) {
		if c.approved > 0 {
			name += " " + s.Approved.Render("✓"+itoa(c.approved))
		}
		if c.denied > 0 {
			name += " " + s.Denied.Render("✗"+itoa(c.denied))
		}
		per = append(per, name)
	}
	for _, agent := range slices.Sorted(maps.Keys(m.autoByAgent)) {
		counted(agent, *m.autoByAgent[agent])
	}
	if m.otherAgents != (autoCount{}) {
		counted("other agents", m.otherAgents)
	}
	return []string{latest, s.Muted.Render("auto by agent: ") + strings.Join(per, " · ")}
}

// statusLines wrap the status at words over at most three lines, so what a
// first press says it would decide is read whole, not cut at the width.
func (m *Model) statusLines() []string {
	if m.filtering {
		return []string{m.filterInput.View()}
	}
	if m.status == "" || m.opts.Now().Sub(m.statusAt) > statusTTL {
		return []string{""}
	}
	return styled(m.styles.Status, capped(wrapWords("» "+m.status, m.width), 3, m.width))
}

// layout is the queue's body and what of the highlighted ask it shows: the
// must ordinals on screen whole (decision 0159) and whether its change, if
// it has one, is on screen whole.
type layout struct {
	lines       []string
	shown       []int
	must        int // the must ordinals of the highlighted ask's detail
	changeWhole bool
}

// queueLayout is the queue (at most a third of the body, scrolled to keep
// the highlighted ask in view) over the detail of the highlighted ask.
func (m *Model) queueLayout(height int) layout {
	return m.layoutWith(height, m.shape(height))
}

// queueShape is how much of the body the queue list takes: its rows and
// whether it names its columns.
type queueShape struct {
	rows  int
	names bool
}

// shape is the queue list's share of the body: a third of it, with column
// names above 20 rows; when the highlighted ask's change would not fit
// whole, the list gives way, down to the highlighted row alone, before the
// change is cut; when it cannot fit at all, three rows (decision 0154).
func (m *Model) shape(height int) queueShape {
	def := queueShape{rows: max(3, height/3), names: m.height > 20}
	e := m.current()
	switch {
	case e == nil || e.diff == nil:
		return def
	case len(e.diff.Lines) > height:
		return queueShape{rows: 3}
	}
	for _, sh := range []queueShape{def, {3, def.names}, {3, false}, {1, false}} {
		if m.layoutWith(height, sh).changeWhole {
			return sh
		}
	}
	return queueShape{rows: 3} // it will not fit: as much of it as leaves the list readable
}

func (m *Model) layoutWith(height int, sh queueShape) layout {
	if len(m.queue) == 0 {
		return layout{lines: []string{
			m.rule("queue"),
			"",
			"  No asks waiting for you.",
			m.styles.Muted.Render("  Automatic answers are counted above and listed in the log (l)."),
		}}
	}
	all, first, visible := m.queueWindow(sh.rows)
	title := "queue"
	if visible < len(all) {
		title = fmt.Sprintf("queue %d–%d of %d", first+1, first+visible, len(all))
		if m.grouped { // the count includes the group headings
			title = fmt.Sprintf("queue lines %d–%d of %d", first+1, first+visible, len(all))
		}
	}
	shown := m.shown()
	if m.filter != "" {
		title += fmt.Sprintf(" · /%s: %d of %d", Sanitize(m.filter), len(shown), len(m.queue))
	}
	if n := m.selectedCount(); n > 0 {
		title += fmt.Sprintf(" · %d selected", n)
	}
	cols := m.columns()
	lines := []string{m.rule(title)}
	if sh.names {
		lines = append(lines, m.styles.Muted.Render(cols.row("  ", "   ", "agent", "surface", "value", "age", "left")))
	}
	for _, l := range all[first : first+visible] {
		if l.e == nil {
			lines = append(lines, m.styles.Muted.Render(l.heading))
			continue
		}
		lines = append(lines, m.queueRow(l.e, cols))
	}
	if len(shown) == 0 {
		return layout{lines: append(lines, "", "  No ask matches the filter; esc clears it.")}
	}

	e := m.current()
	pos := fmt.Sprintf("ask %d of %d", indexOf(shown, m.highlight)+1, len(shown))
	if m.cursorShifted {
		pos += " · ⚠ new ask under the highlight"
	}
	lines = append(lines, m.rule(pos))
	room := height - len(lines)
	fields := m.detailOf(e)
	switch sel := m.selectedShown(); {
	case len(sel) > 0 && !slices.Contains(sel, e):
		fields = slices.Insert(fields, 0, field{label: "selection", kind: kindWarning,
			text: "⚠ not selected: y n r act on the " + plural(len(sel), "selected ask") + ", not on this one (esc clears)"})
	case len(sel) > 1:
		fields = slices.Insert(fields, 0, field{label: "selection", kind: kindWarning,
			text: "y approves " + itoa(len(sel)) + " selected, this one and " + plural(len(sel)-1, "other") + " (named above the status)"})
	}
	l := m.detailLines(fields, room)
	l.lines = append(lines, l.lines...)
	l.must = mustCount(fields)
	return l
}

// detailLines fit an ask's detail to room lines and say which must fields
// are on screen whole, and whether its change (the diff of a write or edit)
// is. The change comes right after the agent and path; at 120 columns or
// more it is beside the rest (decision 0154).
func (m *Model) detailLines(fields []field, room int) layout {
	isChange := func(f field) bool { return f.diff }
	var l layout
	if slices.ContainsFunc(fields, isChange) && m.width >= 120 {
		rest := slices.DeleteFunc(slices.Clone(fields), isChange)
		change := slices.DeleteFunc(slices.Clone(fields), func(f field) bool { return !f.diff })
		lw := (m.width - 3) / 2
		left, leftShown := m.fitFields(rest, room, lw)
		right, rightShown := m.fitFields(change, room, m.width-3-lw)
		n := max(len(left), len(right))
		left, right = fitLines(left, n), fitLines(right, n)
		for i := range n {
			l.lines = append(l.lines, pad(left[i], lw)+" │ "+right[i])
		}
		l.shown = append(leftShown, rightShown...)
	} else {
		l.lines, l.shown = m.fitFields(fields, room, m.width)
	}
	l.changeWhole = !slices.ContainsFunc(fields, func(f field) bool {
		return f.diff && f.must > 0 && !slices.Contains(l.shown, f.must)
	})
	return l
}

// fitFields renders fields in width and fits them to room lines: values
// stay whole (up to a few lines), explanations get one line, and what is
// left is counted. It lists the must ordinals on screen whole.
func (m *Model) fitFields(fields []field, room, width int) ([]string, []int) {
	if len(fields) <= room { // each field takes a line at least
		if detail, owner := m.renderOwned(fields, true, 0, width); len(detail) <= room {
			return detail, seenIn(owner, len(owner))
		}
	}
	detail, owner := m.renderOwned(fields, false, maxFactLines, width)
	if len(detail) > room {
		shown := seenIn(owner, max(room-1, 0))
		return append(detail[:max(room-1, 0)], m.styles.Muted.Render(
			fmt.Sprintf("… %d more lines: v shows everything", len(detail)-room+1))), shown
	}
	return detail, seenIn(owner, len(owner))
}

// detailOf is the detail of an ask with what only the queue knows: how
// many identical asks wait with it.
func (m *Model) detailOf(e *entry) []field {
	f := detailFields(e)
	if e.state != statePending {
		return f
	}
	if out := m.outOfForce(); len(out) > 0 {
		// Right after why: the why was reached without these rules.
		at := slices.IndexFunc(f, func(fl field) bool { return fl.label == "why" }) + 1
		if at == 0 {
			at = pathEnd(f)
		}
		f = slices.Insert(f, at, out...)
	}
	n := 0
	for _, o := range m.queue {
		if o != e && o.state == statePending && o.same == e.same {
			n++
		}
	}
	if n > 0 {
		note := field{label: "identical", text: plural(n, "more identical ask waits", "more identical asks wait") +
			"; a approves all " + itoa(n+1) + " (after showing which)", kind: kindWarning}
		// First, or after the change: the change stays right under the path.
		at := 0
		for i, fl := range f {
			if fl.diff {
				at = i + 1
			}
		}
		f = slices.Insert(f, at, note)
	}
	return f
}

// selectionLines name, above the status line, the selected asks y n r
// would answer, so the decision never rests on a count in a title. At most
// two lines; the rows marked [•] name the rest.
func (m *Model) selectionLines() []string {
	if m.mode != modeQueue || m.filtering {
		return nil
	}
	sel := m.selectedShown()
	if len(sel) == 0 {
		return nil
	}
	names := make([]string, len(sel))
	for i, e := range sel {
		names[i] = endLabel(e, 60)
	}
	text := "y approves " + itoa(len(sel)) + " selected: " + strings.Join(names, "; ")
	if hidden := m.selectedCount() - len(sel); hidden > 0 {
		text += " (" + itoa(hidden) + " more selected are hidden by the filter and not answered)"
	}
	lines := wrapWords(text, m.width)
	if len(lines) > 2 {
		lines = append(lines[:1], ansi.Truncate(lines[1], m.width-len(" … more marked [•]"), "")+" … more marked [•]")
	}
	return styled(m.styles.Warning, lines)
}

// outOfForce names, for an ask's detail, the policy files whose rules —
// denies included — were not used to judge it because they are unusable
// (decision 0155). serve reports each problem as "<quoted file>: message".
func (m *Model) outOfForce() []field {
	var f []field
	for i, p := range m.policy.Problems {
		if i == 3 {
			f = append(f, field{label: "policy", text: "⚠ and " + plural(len(m.policy.Problems)-3, "more unusable file") + " (l: log)", kind: kindWarning})
			break
		}
		file, what := "the file the policy problem names", "the rules the policy problem names"
		if q, err := strconv.QuotedPrefix(p); err == nil {
			file, what = q, "every rule of "+q
			p = strings.TrimPrefix(strings.TrimPrefix(p, q), ": ")
		}
		text := "⚠ out of force: " + Sanitize(what) + ", its denies included, so this ask was judged without them (" + Sanitize(p) + ")"
		if why, denies, ok := strings.Cut(p, resolve.OutOfForceDenies); ok {
			// The denies first: in a short detail this line is cut.
			text = "⚠ out of force: the denies " + Sanitize(denies) + " written in " + Sanitize(file) +
				", which could not be used, so this ask was judged without them (" + Sanitize(why) + ")"
		}
		f = append(f, field{label: "policy", kind: kindWarning, text: text})
	}
	return f
}

// endLabel names an ask in at most w cells: agent · surface · value, a
// path's value cut at its start so the file name shows, as in its row.
func endLabel(e *entry, w int) string {
	r := e.ask.Request
	head := agentName(r) + " · " + Sanitize(serve.SurfaceOf(r)) + " · "
	value, keepEnd := rowValue(e.ask)
	if room := w - ansi.StringWidth(head); keepEnd && room > 8 && ansi.StringWidth(value) > room {
		value = ansi.TruncateLeft(value, ansi.StringWidth(value)-room+1, "…")
	}
	return truncate(head+value, w)
}

// queueWindow is the part of the queue list shown in at most rows lines,
// scrolled to keep the highlighted ask in view.
func (m *Model) queueWindow(rows int) (all []queueLine, first, visible int) {
	all = m.queueLines()
	visible = min(len(all), rows)
	cur := max(lineOf(all, m.highlight), 0)
	first = min(max(cur-visible+1, 0), len(all)-visible)
	return all, first, visible
}

// askAt is the ask whose queue row is on screen line y, or nil: the queue's
// rows start below the header, its rule and the column names.
func (m *Model) askAt(y int) *entry {
	header, _, height := m.frame()
	sh := m.shape(height)
	all, first, visible := m.queueWindow(sh.rows)
	rows := y - len(header) - 1
	if sh.names {
		rows--
	}
	if i := rows; i >= 0 && i < visible {
		return all[first+i].e
	}
	return nil
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
		c.agent = max(c.agent, ansi.StringWidth(rowAgent(e.ask)))
		c.surface = max(c.surface, ansi.StringWidth(Sanitize(serve.SurfaceOf(e.ask.Request))))
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
	if m.armed != nil && slices.Contains(m.armed.targets, e.ask.ID) {
		sel = "[≡]" // what a second press would answer
	}
	left := countdown(created.Add(DefaultTimeout).Sub(now))
	switch e.state {
	case stateExpired:
		sel, left = "[-]", "expired"
	case stateSending:
		left = "sending"
	}
	value, keepEnd := rowValue(e.ask)
	mark := ""
	if floored(r.AccessIntent) {
		mark = "⚠ " // the child's parser forced this ask
	}
	if e.ask.Verdict.OutsideProject != "" {
		mark += "∉ " // judged without the project at its cwd (decision 0234)
	}
	if _, label := judgedValue(e.ask); label != "" {
		mark += "≠ " // the child's display value is not what was judged
	}
	if w := cols.value - ansi.StringWidth(mark); keepEnd && ansi.StringWidth(value) > w {
		value = ansi.TruncateLeft(value, ansi.StringWidth(value)-w+1, "…")
	}
	line := cols.row(cursor, sel, rowAgentIn(e.ask, cols.agent), Sanitize(serve.SurfaceOf(r)), mark+value,
		age(now.Sub(created)), left)
	switch {
	case e.ask.ID == m.highlight:
		return bar(line, m.width)
	case e.state == stateExpired:
		return m.styles.Muted.Render(line)
	}
	return line
}

// rowAgentIn is rowAgent in at most w cells. A hub ask's host stays whole
// and the agent name is cut first, from the right: hosts with a common
// prefix (prod-a, prod-b) must stay apart. When the host alone does not
// fit, it is shown without the agent; the detail's host line has it whole.
func rowAgentIn(a serve.Ask, w int) string {
	full := rowAgent(a)
	if a.Host == "" || ansi.StringWidth(full) <= w {
		return truncate(full, w)
	}
	host := Sanitize(a.Host)
	if room := w - 1 - ansi.StringWidth(host); room > 0 {
		return truncate(agentName(a.Request), room) + "@" + host
	}
	return truncate(host, w)
}

// bar shows the highlighted row as a full-width reverse-video bar. It is
// written as plain SGR 7 rather than through the colour profile, so it shows
// under NO_COLOR too: reverse video is not colour, and the row must stand
// out on every terminal.
func bar(line string, width int) string {
	return "\x1b[7m" + pad(ansi.Strip(line), width) + "\x1b[27m"
}

// openPager shows the full detail of the highlighted ask or the decision
// log in the pager.
func (m *Model) openPager(md mode) {
	e := m.current()
	if md == modeView && e == nil {
		m.setStatus("nothing to show")
		return
	}
	m.pager.ask, m.pager.fill = 0, func() ([]string, []int) { return m.logLines(), nil }
	if md == modeView {
		id := e.ask.ID
		m.pager.ask, m.pager.fill = id, func() ([]string, []int) {
			if e := m.find(id); e != nil {
				return m.renderOwned(m.detailOf(e), true, 0, m.width)
			}
			return nil, nil
		}
	}
	m.mode = md
	m.sizePager(true)
	if md == modeLog {
		m.pager.vp.GotoBottom()
	} else {
		m.pager.vp.GotoTop()
	}
}

// sizePager fits the pager's window to the body as it is now (rule above,
// status and help below): a status of two lines takes one from it, and a
// line the window holds but the screen cuts would be paged over unseen.
// refill fills it again; a closed pager has let its text go (releaseClosed)
// and has nothing to refill.
func (m *Model) sizePager(refill bool) {
	_, _, body := m.frame()
	m.pager.refresh(m.width, max(body-1, 1), refill)
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
		times := ""
		if l.count > 1 {
			times = "  ×" + itoa(l.count)
		}
		if l.note != "" {
			out = append(out, hanging(stamp, l.note+times, m.width)...)
			continue
		}
		out = append(out, hanging(stamp, m.stateWords(l.outcome)+"  "+l.label+times, m.width)...)
		by := "by " + l.by
		if l.choice != "" {
			by += " · " + l.choice
		}
		if l.reason != "" {
			by += " · reason: " + l.reason
		}
		out = append(out, hanging(logIndent, by, m.width)...)
	}
	return out
}

// stateWords says the outcome in words and a glyph, never by colour alone.
func (m *Model) stateWords(o outcome) string {
	if o.approved {
		return m.styles.Approved.Render(outcomeWords(o))
	}
	return m.styles.Denied.Render(outcomeWords(o))
}

func outcomeWords(o outcome) string {
	switch {
	case o.forSession:
		return "✓ approved for session"
	case o.approved:
		return "✓ approved"
	}
	return "✗ denied"
}

// decidedBy names the rule or person behind a response, clipped.
func decidedBy(ds *wire.DecisionSource, auto, approved bool) string {
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
		pattern := termsafe.Blanks(termsafe.Clip(deref(ds.Pattern), textBytes))
		if origin == "session" { // a session rule: a grant, or a session deny (decision 0104)
			kind := map[bool]string{true: "session grant ", false: "session deny "}[approved]
			return kind + termsafe.Clip(ds.Surface, nameBytes) + " " + pattern
		}
		return "rule (" + termsafe.Clip(origin, nameBytes) + ") " + termsafe.Clip(ds.Surface, nameBytes) + ": " + pattern
	}
	s := termsafe.Clip(ds.Kind, nameBytes)
	if ds.Reason != nil {
		s += ": " + termsafe.Clip(*ds.Reason, textBytes)
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
	if d >= time.Hour {
		return age(d)
	}
	d = d.Truncate(time.Second)
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

// styled renders each line in style, in place.
func styled(style lipgloss.Style, lines []string) []string {
	for i := range lines {
		lines[i] = style.Render(lines[i])
	}
	return lines
}

// fitLines pads or cuts to exactly height lines.
func fitLines(lines []string, height int) []string {
	lines = lines[:min(len(lines), height)]
	return append(lines, make([]string, height-len(lines))...)
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
