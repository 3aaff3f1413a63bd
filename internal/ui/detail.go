package ui

import (
	"cmp"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/permtui/permtui/internal/preview"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

type fieldKind int

const (
	kindPlain fieldKind = iota
	kindBoundary
	kindWarning
	kindAnnotation
	kindMuted
	kindHeading
	kindAdded   // a diff's + line
	kindRemoved // a diff's - line
	kindContext // a diff's unchanged line
	kindHunk    // a diff's @@ line
)

// field is one labelled fact of the detail view. Text is already sanitized
// and holds no newline.
type field struct {
	label string
	text  string
	kind  fieldKind
	diff  bool // part of the change of a write or edit (shown first, or beside)
	// must numbers, from 1, the fields approving waits to have had on
	// screen whole: the change's lines and what the ask is for (command,
	// values, units); 0 for the rest (decision 0159).
	must int
}

// mustCount is how many fields approving waits to have seen.
func mustCount(f []field) int {
	n := 0
	for _, x := range f {
		n = max(n, x.must)
	}
	return n
}

// numberMust sets the must ordinals of fields.
func numberMust(f []field) {
	n := 0
	for i := range f {
		switch l := f[i].label; {
		case f[i].prose():
		case f[i].diff, l == "command", l == "value", l == "match", l == "boundary", strings.HasPrefix(l, "unit "):
			n++
			f[i].must = n
		}
	}
}

// prose fields wrap at word boundaries; values (commands, paths) wrap at the
// exact cell so their spacing is shown as it is.
func (f field) prose() bool {
	return f.kind == kindHeading || f.kind == kindMuted || f.kind == kindAnnotation || f.kind == kindWarning ||
		f.label == "why" || f.label == "covers"
}

// detailFields lists everything known about an ask, most decision-relevant
// first: who asks for exactly what (every value, floor and unit), from where
// and why, then the session ids, what was dropped, the child's payload (or
// legacy message), and what a session approval records.
func detailFields(e *entry) []field {
	a := e.ask
	r := a.Request
	ai := r.AccessIntent
	var f []field
	add := func(label, text string, kind fieldKind) { f = append(f, field{label: label, text: text, kind: kind}) }

	if e.state == stateExpired {
		add("status", "⌛ expired: "+expiredWhy(e)+"; this ask can no longer be answered", kindWarning)
	}
	f = append(f, agentField(a))
	if ai != nil && (ai.Principal.SessionID != r.RequesterSessionID || ai.Principal.AgentName != r.RequesterAgentName) {
		add("principal", "⚠ differs from the requester: "+blanked(ai.Principal.AgentName)+" "+
			Sanitize(ai.Principal.SessionID), kindWarning)
	}
	if ai == nil {
		add("surface", Sanitize(deref(r.Surface))+" (display only: the request carries no accessIntent)", kindWarning)
		add("value", Sanitize(deref(r.Value)), kindPlain)
	} else {
		f = append(f, intentFields(a)...)
	}
	if why := strings.TrimSpace(a.Verdict.Explanation); why != "" {
		add("why", Sanitize(why), kindPlain)
	}
	if rule := a.Verdict.Rule; rule != nil {
		add("rule", ruleText(rule), kindMuted)
	}
	if h := a.Verdict.Hint; h != nil {
		add("hint", "⚠ unverified: from the child's legacy surface and value, not facts; it decides nothing. "+
			"On that text the root's policy would say: "+Sanitize(h.Explanation), kindWarning)
	}
	if a.Host != "" {
		add("host", Sanitize(a.Host), kindPlain)
	}
	add("session", Sanitize(r.RequesterSessionID), kindPlain)
	add("served", Sanitize(a.Session), kindPlain)
	if r.Source != "" && r.Source != wire.SourceToolCall {
		add("source", Sanitize(string(r.Source)), kindPlain)
	}
	for _, d := range r.Dropped {
		add("warning", "⚠ dropped "+Sanitize(d.Field)+": "+Sanitize(d.Reason), kindWarning)
	}

	// The change follows the agent and the path, before anything long
	// (decision 0154).
	f = slices.Insert(f, pathEnd(f), changeFields(e)...)
	switch {
	case r.Payload != nil:
		f = append(f, payloadFields(r)...)
	case r.Message != nil:
		add("", "message (legacy, pre-rendered by the child)", kindHeading)
		for _, line := range SanitizeLines(*r.Message) {
			add("", line, kindPlain)
		}
	}

	f = append(f, sessionFields(e.ask)...)
	numberMust(f)
	return f
}

// changeFields are the diff of a write or edit ask with what the person
// must know of its age: read late, stale, or read again.
func changeFields(e *entry) []field {
	var notes []field
	note := func(text string, kind fieldKind) { notes = append(notes, field{text: text, kind: kind, diff: true}) }
	switch {
	case e.diffStale:
		note("⚠ stale: the file changed; reading it again (approvals wait)", kindWarning)
	case e.diffReread:
		note("⚠ file changed after the ask arrived; diff read again at "+e.diffRead.Format("15:04:05"), kindWarning)
	case e.diffLate && e.diff != nil:
		note("file read at "+e.diffRead.Format("15:04:05")+" when this ask was shown, not when it arrived ("+
			e.ask.At.Format("15:04:05")+"): the console keeps at most "+itoa(diffBudget>>20)+" MiB of diffs", kindMuted)
	}
	if e.diff == nil {
		if e.diffLate || e.diffState == diffWaiting || e.diffState == diffReading {
			note("change: reading the file for the diff…", kindMuted)
		}
		return notes
	}
	diff := diffFields(*e.diff)
	return slices.Insert(diff, 1, notes...) // under the first line: the diff may be long
}

// pathEnd is where the facts that name who asks for which path end: the
// change goes there.
func pathEnd(f []field) int {
	for i, fl := range f {
		switch fl.label {
		case "status", "agent", "principal", "surface", "command", "value", "match", "boundary":
		default:
			return i
		}
	}
	return len(f)
}

// intentFields shows the child's facts, marking the asking unit the
// verdict names.
func intentFields(a serve.Ask) []field {
	r, decidingUnit := a.Request, a.Verdict.Unit
	ai := r.AccessIntent
	var f []field
	add := func(label, text string, kind fieldKind) { f = append(f, field{label: label, text: text, kind: kind}) }
	surface := Sanitize(ai.Surface)
	if tool := deref(r.Surface); tool != "" && tool != ai.Surface {
		surface += " (tool " + Sanitize(tool) + ")"
	}
	add("surface", surface, kindPlain)
	if full := fullCommand(r); full != "" && full != deref(r.Value) {
		add("command", Sanitize(full), kindPlain)
	}
	if v := deref(r.Value); v != "" && !slices.Contains(ai.MatchValues, v) && !unitsContain(ai.AskingUnits, v) {
		if _, label := judgedValue(a); label != "" {
			add("value", Sanitize(v)+"  ≠ the child's label, not what was judged (match)", kindWarning)
		} else {
			add("value", Sanitize(v), kindPlain)
		}
	}
	boundary := deref(ai.BoundaryValue)
	for _, v := range ai.MatchValues {
		if v == boundary && boundary != "" {
			add("match", blanked(v)+"  ◆ boundary", kindBoundary)
		} else {
			add("match", blanked(v), kindPlain)
		}
	}
	if boundary != "" && !slices.Contains(ai.MatchValues, boundary) {
		add("boundary", "◆ "+Sanitize(boundary), kindBoundary)
	}
	if ai.Floor != nil {
		add("floor", "⚠ "+Sanitize(*ai.Floor)+" (the child's parser forced an ask)", kindWarning)
	}
	for i, u := range ai.AskingUnits {
		text := blanked(u.Command)
		if u.Floor != nil {
			text += "  ⚠ floor " + Sanitize(*u.Floor)
		}
		if u.Command == decidingUnit && len(ai.AskingUnits) > 1 {
			text += "  ◀ decides"
		}
		add("unit "+itoa(i+1), text, kindPlain)
	}
	cwd, kind := Sanitize(ai.RequesterCwd), kindPlain
	switch own, p := a.Verdict.OwnProject, a.Verdict.OutsideProject; {
	case own != "": // decision 0257
		cwd, kind = cwd+"  ⚠ has its own project ("+Sanitize(filepath.Join(own, ".pi"))+") that permtui does not judge with: name it with --project "+
			Sanitize(own)+" and --session", kindWarning
	case p != "": // decision 0234
		cwd, kind = cwd+"  ⚠ judged without the project at this cwd: permtui judges with the project "+Sanitize(p), kindWarning
	}
	add("cwd", cwd, kind)
	return f
}

// fullCommand is the whole chain a bash child split into asking units, from
// its "full command" evidence: a unit alone can look harmless.
func fullCommand(r *wire.Request) string {
	if r.AccessIntent == nil || len(r.AccessIntent.AskingUnits) == 0 || r.Payload == nil {
		return ""
	}
	for _, ev := range r.Payload.Evidence {
		if ev.Label == "full command" {
			return ev.Text
		}
	}
	return ""
}

// floored reports whether the child's parser forced this ask.
func floored(ai *wire.AccessIntent) bool {
	return ai != nil && (ai.Floor != nil || slices.ContainsFunc(ai.AskingUnits, func(u wire.AskingUnit) bool { return u.Floor != nil }))
}

func unitsContain(units []wire.AskingUnit, v string) bool {
	return slices.ContainsFunc(units, func(u wire.AskingUnit) bool { return u.Command == v })
}

// diffFields shows what a write or edit would change. Each line keeps its
// +, - or space prefix, so it reads the same without colour. The first hunk
// line carries the "change" label and what the diff is against, so the
// change starts on the first line after the path.
func diffFields(d preview.Diff) []field {
	against := "against the file as it is now"
	if d.NewFile {
		against = "a new file: every line added"
	}
	f := []field{{label: "change", text: against, kind: kindMuted, diff: true}}
	for _, l := range d.Lines {
		text, kind := string(rune(l.Kind))+" "+Sanitize(l.Text), kindContext
		switch l.Kind {
		case preview.Added:
			kind = kindAdded
		case preview.Removed:
			kind = kindRemoved
		case preview.Hunk:
			text, kind = Sanitize(l.Text), kindHunk
		case preview.NoEOL:
			text, kind = `\ no newline at the end`, kindHunk
		}
		f = append(f, field{text: text, kind: kind, diff: true})
	}
	if d.Note != "" {
		f = append(f, field{text: Sanitize(d.Note), kind: kindMuted, diff: true})
	}
	if len(d.Lines) > 0 && d.Lines[0].Kind == preview.Hunk {
		f[1].label, f[1].text = "change", f[1].text+"  ("+against+")"
		return f[1:]
	}
	return f
}

func payloadFields(r *wire.Request) []field {
	p := r.Payload
	pr := p.Request
	var f []field
	add := func(label, text string, kind fieldKind) { f = append(f, field{label: label, text: text, kind: kind}) }
	add("", "payload ("+Sanitize(p.Kind)+")", kindHeading)
	if tool := deref(pr.ToolName); tool != "" {
		if inv := deref(pr.InvokedToolName); inv != "" && inv != tool {
			tool += " via " + Sanitize(inv)
		}
		add("tool", Sanitize(tool), kindPlain)
	}
	// The payload's value and "full command" name the command too, in the
	// child's words: when they are none of the facts judged, they say so.
	judged := func(label, raw, text string) {
		if unjudged(r.AccessIntent, raw) {
			add(label, text+"  ≠ judged", kindWarning)
		} else {
			add(label, text, kindPlain)
		}
	}
	if pr.Value != deref(r.Value) {
		judged("value", pr.Value, Sanitize(pr.Value))
	}
	if pr.MatchedPattern != nil {
		add("matched", Sanitize(*pr.MatchedPattern), kindPlain)
	}
	if pr.MatchedSpelling != nil {
		// Under the pattern it reads "matched <pattern> as <spelling>".
		label := "matched"
		if pr.MatchedPattern != nil {
			label = ""
		}
		add(label, "as "+Sanitize(*pr.MatchedSpelling), kindPlain)
	}
	if pr.CommandContext != nil {
		add("context", Sanitize(*pr.CommandContext), kindPlain)
	}
	if pr.ExecutedUnit != nil {
		add("runs", Sanitize(*pr.ExecutedUnit), kindPlain)
	}
	for _, ev := range p.Evidence {
		text := Sanitize(ev.Label) + ": " + Sanitize(ev.Text)
		if ev.Detail != nil {
			text += " (" + Sanitize(*ev.Detail) + ")"
		}
		if ev.Label == "full command" {
			judged("evidence", ev.Text, text)
		} else {
			add("evidence", text, kindPlain)
		}
	}
	// The source is the child's word: "permtui" must not read as permtui's.
	for _, an := range p.Annotations {
		add("note", "✎ model-generated, from "+strconv.Quote(Sanitize(an.Source))+" (child's claim): "+Sanitize(an.Text), kindAnnotation)
	}
	return f
}

// sessionFields shows what each "approve for session" choice would do, as
// serve words it.
func sessionFields(a serve.Ask) []field {
	heading := "approve for session (s) would record"
	if sa := a.Request.SessionApproval; sa != nil && sa.Legacy {
		heading += " (suggestion sent in the 20.x {surface, patterns} shape)"
	}
	f := []field{{text: heading, kind: kindHeading}}
	for _, o := range a.Scopes.Options {
		kind := kindPlain // grant patterns wrap at the cell, like every value
		if o.Grants == nil {
			kind = kindMuted
		}
		f = append(f, field{text: o.Title + ": " + scopeEffect(o), kind: kind})
		if len(o.Wider) > 0 {
			f = append(f, field{text: "  " + reachSummary(o.Wider), kind: kindWarning})
		}
		if o.Caveat != "" {
			f = append(f, field{text: "  " + Sanitize(o.Caveat), kind: kindMuted})
		}
	}
	if a.Scopes.Note != "" {
		f = append(f, field{text: a.Scopes.Note, kind: kindMuted})
	}
	return f
}

// reachSummary names, in one line, the grants of a scope that reach beyond
// the ask and how many deny rules they pass; the s dialog says how.
func reachSummary(wider []serve.Reach) string {
	gs, denies := make([]wire.Grant, len(wider)), 0
	for i, r := range wider {
		gs[i], denies = r.Grant, denies+len(r.Denies)
	}
	text := "⚠ beyond this ask: " + grantsText(gs)
	if denies > 0 {
		text += "; " + plural(denies, "deny rule") + " passed"
	}
	return text + " (s says how)"
}

// scopeEffect is a scope's effect followed by the grants it records.
func scopeEffect(o serve.Scope) string {
	if o.Grants == nil {
		return o.Effect
	}
	return o.Effect + " " + grantsText(o.Grants)
}

// grantsText lists grants on one line.
func grantsText(gs []wire.Grant) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = grantText(g)
	}
	return strings.Join(parts, ", ")
}

func ruleText(rule *resolve.RuleRef) string {
	s := Sanitize(rule.Origin) + " " + Sanitize(rule.Surface) + ": " + Sanitize(rule.Pattern) + " → " + string(rule.Action)
	if rule.File != "" {
		s += " (" + Sanitize(rule.File) + ")"
	}
	return s
}

// rowAgent is the agent as a queue row names it, with the relay host beside
// it when the ask came through a hub.
func rowAgent(a serve.Ask) string {
	if a.Host != "" {
		return agentName(a.Request) + "@" + Sanitize(a.Host)
	}
	return agentName(a.Request)
}

// agentName is an agent as the console names it anywhere: marked when it
// may look like another agent's, its blanks shown (decision 0205).
func agentName(r *wire.Request) string {
	name := r.Agent()
	shown := termsafe.Blanks(termsafe.Clip(name, nameBytes))
	if termsafe.Lookalike(name) {
		return "⚠" + shown
	}
	return shown
}

// agentField is the detail's agent line: the name, spelled by code point
// when it is not plain ASCII, and whether an agent file has that name (an
// agent without one is judged by the shared policy alone).
func agentField(a serve.Ask) field {
	name := a.Request.Agent()
	f := field{label: "agent", text: blanked(name), kind: kindPlain}
	var notes []string
	switch {
	case termsafe.NonASCII(name):
		notes = append(notes, "⚠ not plain ASCII: "+termsafe.CodePoints(name))
	case termsafe.Lookalike(name): // plain ASCII with a blank: "builder " reads as builder
		notes = append(notes, "⚠ blanks in the name (shown as ␠)")
	}
	if a.Verdict.AgentWithoutFile {
		notes = append(notes, "no agent file has this name: only the shared policy judged it")
	}
	if r := a.Verdict.AgentResembles; r != "" {
		notes = append(notes, "⚠ not the agent "+strconv.Quote(Sanitize(r))+", whose file differs only by case or blanks: its rules do not apply")
	}
	if len(notes) > 0 {
		f.text, f.kind = f.text+"  "+strings.Join(notes, " · "), kindWarning
	}
	return f
}

// judgedValue is what a row or label names: the child's display value when
// it is one of the facts judged and, in a chain, the unit that decided or
// the whole chain; else what decided (the verdict's unit, or the first match
// value), with the display value as the child's label. A request without
// facts has only its display value.
func judgedValue(a serve.Ask) (value, label string) {
	r := a.Request
	v := displayValue(r)
	ai := r.AccessIntent
	if ai == nil {
		return v, ""
	}
	unit := a.Verdict.Unit
	if !unitsContain(ai.AskingUnits, unit) { // only a unit of this request names it
		unit = ""
	}
	switch {
	case unjudged(ai, v):
		return cmp.Or(unit, ai.MatchValues[0]), v
	case unit != "" && v != unit && (slices.Contains(ai.MatchValues, v) || unitsContain(ai.AskingUnits, v)):
		return unit, v // another unit of the chain decided (decision 0204's amendment)
	}
	return v, ""
}

// unjudged: the child's text v names a command or path that is none of the
// facts the policy judged. Without facts nothing was judged to differ from.
func unjudged(ai *wire.AccessIntent, v string) bool {
	return ai != nil && len(ai.MatchValues) > 0 && !factual(ai, v)
}

// factual: v is a match value or an asking unit, or a chain's full command
// that holds every one of them.
func factual(ai *wire.AccessIntent, v string) bool {
	if slices.Contains(ai.MatchValues, v) || unitsContain(ai.AskingUnits, v) {
		return true
	}
	missing := func(f string) bool { return !strings.Contains(v, f) }
	return len(ai.AskingUnits) > 0 && !slices.ContainsFunc(ai.MatchValues, missing) &&
		!slices.ContainsFunc(ai.AskingUnits, func(u wire.AskingUnit) bool { return missing(u.Command) })
}

// displayValue is what the child shows: the whole chain when it split one,
// else the display value.
func displayValue(r *wire.Request) string {
	switch full := fullCommand(r); {
	case full != "":
		return full
	case r.Value != nil:
		return *r.Value
	case r.Payload != nil:
		return r.Payload.Request.Value
	case r.AccessIntent != nil && len(r.AccessIntent.MatchValues) > 0:
		return r.AccessIntent.MatchValues[0]
	}
	return ""
}

// rowValue is what a queue row or label shows and whether its end matters
// more than its start. A path ask keeps its end (the file name) when cut, and
// a relative display value (pi shows paths relative to the child's cwd,
// which hides the worktree) gives way to the absolute boundary path.
func rowValue(a serve.Ask) (text string, keepEnd bool) {
	v, keepEnd := rawRowValue(a)
	return blanked(v), keepEnd
}

// rawRowValue is rowValue before sanitizing.
func rawRowValue(a serve.Ask) (text string, keepEnd bool) {
	r := a.Request
	v, _ := judgedValue(a)
	ai := r.AccessIntent
	if ai == nil || deref(ai.BoundaryValue) == "" {
		return v, pathAsk(r)
	}
	if !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "~") {
		v = *ai.BoundaryValue
	}
	return v, true
}

// pathAsk reports whether an ask names a file (a directional path surface,
// or pi's read, write and edit tools), whose end matters most.
func pathAsk(r *wire.Request) bool {
	s := serve.SurfaceOf(r)
	if _, ok := resolve.Family(s); ok {
		return true
	}
	return s == "read" || s == "write" || s == "edit"
}

// copyText is what c copies: the value a queue row shows, neutralized like
// everything shown, so a pasted value cannot carry a newline that runs it or
// an escape sequence.
func copyText(e *entry) string {
	v, _ := rowValue(e.ask)
	return v
}

// askNumber names a delivery where nothing better is known.
func askNumber(id serve.AskID) string { return "#" + strconv.FormatUint(uint64(id), 10) }

// askLabel names an ask in one clipped line: agent, surface and value.
func askLabel(a serve.Ask) string {
	_, _, _, label := askParts(a)
	return label
}
