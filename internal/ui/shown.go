package ui

import (
	"slices"
	"strings"

	"github.com/permtui/permtui/internal/serve"
)

// The queue as shown: the asks the filter (/) lets through, in arrival
// order or, when grouped (t), by root session and agent. Moving, the
// decision keys and the mouse all work on what is shown, so a hidden ask is
// never answered.

// queueLine is one line of the queue list: a group heading or an ask's row.
type queueLine struct {
	e       *entry // nil for a heading
	heading string
}

// shownCache holds the queue as shown, built once per change of the queue,
// the filter or the grouping: a key press reads it several times, and
// rebuilding it each time cost 60 ms with 10,000 asks queued.
type shownCache struct {
	valid bool
	lines []queueLine
	asks  []*entry
}

// queueChanged drops the shown queue; every change to the queue's members or
// order, the filter or the grouping must call it.
func (m *Model) queueChanged() { m.shownCache = shownCache{} }

// shown lists the asks the filter lets through, in display order. Callers
// must not modify the slice.
func (m *Model) shown() []*entry {
	m.buildShown()
	return m.shownCache.asks
}

// queueLines is the queue list: with grouping on, a heading (root session,
// agent and count) before each group, groups in order of their first ask.
// Callers must not modify the slice.
func (m *Model) queueLines() []queueLine {
	m.buildShown()
	return m.shownCache.lines
}

func (m *Model) buildShown() {
	if m.shownCache.valid {
		return
	}
	// Ungrouped, every ask shown is in one group without a heading.
	var order []string
	groups := map[string][]*entry{}
	f := parseFilter(m.filter)
	for _, e := range m.queue {
		if !f.matches(e) {
			continue
		}
		k := ""
		if m.grouped {
			k = groupKey(e)
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	c := shownCache{valid: true}
	for _, k := range order {
		es := groups[k]
		if m.grouped {
			c.lines = append(c.lines, queueLine{heading: "▾ root " + Sanitize(es[0].ask.Session) + " · " +
				agentName(es[0].ask.Request) + " · " + plural(len(es), "ask")})
		}
		for _, e := range es {
			c.lines, c.asks = append(c.lines, queueLine{e: e}), append(c.asks, e)
		}
	}
	m.shownCache = c
}

func groupKey(e *entry) string {
	return e.ask.Session + "\x00" + e.ask.Request.Agent()
}

// lineOf is the index of an ask's line in the queue list, or -1.
func lineOf(lines []queueLine, id serve.AskID) int {
	return slices.IndexFunc(lines, func(l queueLine) bool { return l.e != nil && l.e.ask.ID == id })
}

// queryFilter is the / filter parsed: text to find in the row as shown,
// and field:value terms, each a substring of that field (decision 0152).
// A leading ~ makes the text a fuzzy match instead.
type queryFilter struct {
	text   string
	fuzzy  bool
	fields map[string]string // agent, cwd, surface, session → lower-cased value
}

// filterFields are the fields a term may name.
var filterFields = []string{"agent", "cwd", "surface", "session"}

func parseFilter(q string) queryFilter {
	f := queryFilter{fields: map[string]string{}}
	q = strings.TrimSpace(q)
	if rest, ok := strings.CutPrefix(q, "~"); ok {
		f.fuzzy, q = true, rest
	}
	var words []string
	for _, w := range strings.Fields(q) {
		name, value, ok := strings.Cut(w, ":")
		if ok && slices.Contains(filterFields, strings.ToLower(name)) {
			f.fields[strings.ToLower(name)] = strings.ToLower(value)
			continue
		}
		words = append(words, w)
	}
	f.text = strings.ToLower(strings.Join(words, " "))
	return f
}

func (f queryFilter) matches(e *entry) bool {
	for name, want := range f.fields {
		if !slices.ContainsFunc(fieldValues(e, name), func(v string) bool {
			return strings.Contains(strings.ToLower(v), want)
		}) {
			return false
		}
	}
	if f.text == "" {
		return true
	}
	row := rowText(e)
	if f.fuzzy {
		return fuzzyMatch(f.text, row)
	}
	return strings.Contains(strings.ToLower(row), f.text)
}

// rowText is the text of an ask's queue row, uncut: agent, surface, value.
func rowText(e *entry) string {
	value, _ := rowValue(e.ask)
	return rowAgent(e.ask) + " " + Sanitize(serve.SurfaceOf(e.ask.Request)) + " " + value
}

// fieldValues are the values of one field of an ask a filter term may match.
func fieldValues(e *entry, name string) []string {
	r := e.ask.Request
	switch name {
	case "agent":
		return []string{rowAgent(e.ask)}
	case "surface":
		return []string{serve.SurfaceOf(r), deref(r.Surface)}
	case "session":
		return []string{r.RequesterSessionID, e.ask.Session}
	case "cwd":
		if r.AccessIntent != nil {
			return []string{r.AccessIntent.RequesterCwd}
		}
	}
	return nil
}

// fuzzyMatch reports whether every word of the query appears in text as a
// subsequence (letters in order, gaps allowed), ignoring case: "rvw app"
// finds reviewer's write to src/app.ts.
func fuzzyMatch(query, text string) bool {
	text = strings.ToLower(text)
	for _, word := range strings.Fields(strings.ToLower(query)) {
		rest := text
		for _, r := range word {
			i := strings.IndexRune(rest, r)
			if i < 0 {
				return false
			}
			rest = rest[i+len(string(r)):]
		}
	}
	return true
}

// keepHighlightShown moves the highlight to the first shown ask when the
// filter hides the highlighted one.
func (m *Model) keepHighlightShown() {
	shown := m.shown()
	if indexOf(shown, m.highlight) >= 0 {
		return
	}
	m.highlight = 0
	if len(shown) > 0 {
		m.highlight = shown[0].ask.ID
	}
}
