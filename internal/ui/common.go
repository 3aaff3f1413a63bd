package ui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/permtui/permtui/internal/termsafe"
)

// common is what the root model shares with every overlay, by pointer: the
// terminal size, the styles, the keys and the queue as an overlay may read
// it. Only the root changes it.
type common struct {
	width, height int
	styles        Styles
	keys          KeyMap
	home          string // what "~" in a pattern means (Options.Home)
	q             asks
}

func (c *common) rule(title string) string {
	title = ansi.Truncate("── "+title+" ", max(c.width-2, 4), "… ")
	return c.styles.Muted.Render(title + strings.Repeat("─", max(c.width-ansi.StringWidth(title), 0)))
}

// indented hard-wraps a value under an indent, so a pattern or command is
// shown whole (up to maxLines lines; 0: all).
func (c *common) indented(text string, indent, maxLines int) []string {
	width := max(c.width-indent, 10)
	chunks := capped(strings.Split(ansi.Hardwrap(text, width, true), "\n"), maxLines, width)
	for i, ch := range chunks {
		chunks[i] = strings.Repeat(" ", indent) + ch
	}
	return chunks
}

// newInput is a one-line text input as every dialog and the filter have
// it, with a steady cursor.
func newInput(prompt string, charLimit int) textinput.Model {
	ti := textinput.New()
	ti.Prompt, ti.CharLimit = prompt, charLimit
	ti.Cursor.SetMode(cursor.CursorStatic)
	return ti
}

// typeInto gives a dialog's text input a key or a paste. The input drops
// controls itself; a pasted bidi override or zero-width rune it keeps is
// shown, not obeyed. Neutralize, not Sanitize: what is shown stays as the
// person types on, and the cursor stays after what it was after (a
// stand-in is longer).
func typeInto(in *textinput.Model, msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	*in, cmd = in.Update(msg)
	if v := in.Value(); termsafe.Neutralize(v) != v {
		head := termsafe.Neutralize(string([]rune(v)[:in.Position()]))
		in.SetValue(termsafe.Neutralize(v))
		in.SetCursor(utf8.RuneCountInString(head))
	}
	return cmd
}

// wrapped word-wraps text in style under an indent.
func (c *common) wrapped(style lipgloss.Style, text string, indent int) []string {
	return styled(style, hanging(strings.Repeat(" ", indent), text, c.width))
}

// hanging wraps text at words after prefix, continuing under the text.
func hanging(prefix, text string, width int) []string {
	lines := wrapWords(text, max(width-len(prefix), 10))
	for i := range lines {
		lines[i] = prefix + lines[i]
		prefix = strings.Repeat(" ", len(prefix))
	}
	return lines
}

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

// wrapKeep wraps a value at a single space when one is on the line, else
// at the cell, keeping every character: the lines joined are the value, and
// a run of spaces is never hidden at a line's end. Linear in the value: a
// value may be a MiB.
func wrapKeep(text string, width int) []string {
	var out []string
	line, lineW := "", 0
	add := func(token string) {
		w := ansi.StringWidth(token)
		switch {
		case lineW+w <= width:
			line, lineW = line+token, lineW+w
		case w <= width:
			out = append(out, line)
			line, lineW = token, w
		default: // a word longer than a line is cut at the cell
			if line != "" {
				out = append(out, line)
			}
			parts := strings.Split(ansi.Hardwrap(token, width, true), "\n")
			out = append(out, parts[:len(parts)-1]...)
			line = parts[len(parts)-1]
			lineW = ansi.StringWidth(line)
		}
	}
	from := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' && (i+1 == len(text) || text[i+1] != ' ') {
			add(text[from : i+1])
			from = i + 1
		}
	}
	add(text[from:])
	return append(out, line)
}

// capped keeps at most n lines (0: all), the last cut to end in "…" when
// some were left out.
func capped(lines []string, n, width int) []string {
	if n > 0 && len(lines) > n {
		lines = lines[:n]
		lines[n-1] = ansi.Truncate(lines[n-1], width-1, "") + "…"
	}
	return lines
}

// renderFields lays fields out as label and text. Values (commands, paths)
// wrap at the exact cell so their spacing shows as it is, up to factLines
// lines (0: all); prose wraps at words when wrapProse, else takes one
// truncated line.
func (c *common) renderFields(fields []field, wrapProse bool, factLines int) []string {
	out, _ := c.renderOwned(fields, wrapProse, factLines, c.width)
	return out
}

// renderOwned is renderFields in a column width wide with, for each line,
// the must ordinal of the field it shows (0 for none), negated when that
// field was cut short: what seenIn counts as seen.
func (c *common) renderOwned(fields []field, wrapProse bool, factLines, width int) (out []string, owner []int) {
	s := c.styles
	textWidth := max(width-labelWidth-1, 10)
	styles := [...]lipgloss.Style{kindPlain: s.Value, kindContext: s.Value, kindBoundary: s.Strong,
		kindWarning: s.Warning, kindAnnotation: s.Annotation, kindMuted: s.Muted, kindHunk: s.Muted,
		kindAdded: s.Approved, kindRemoved: s.Denied}
	for _, f := range fields {
		if f.kind == kindHeading {
			for _, ch := range wrapWords(f.text, width) {
				out, owner = append(out, s.Muted.Render(ch)), append(owner, 0)
			}
			continue
		}
		style := styles[f.kind]
		var chunks []string
		own := f.must
		switch {
		case f.prose() && (wrapProse || f.diff): // a note on the change says what its diff cannot show
			chunks = wrapWords(f.text, textWidth)
		case f.prose():
			chunks = []string{ansi.Truncate(f.text, textWidth, "…")}
		default:
			chunks = wrapKeep(f.text, textWidth)
			if factLines > 0 && len(chunks) > factLines {
				chunks, own = capped(chunks, factLines, textWidth), -f.must
			}
		}
		for i, ch := range chunks {
			label := ""
			if i == 0 {
				label = f.label
			}
			out = append(out, s.Muted.Render(pad(label, labelWidth))+" "+style.Render(ch))
			owner = append(owner, own)
		}
	}
	return out, owner
}

// seenIn lists the must ordinals whose lines all lie in owner[:to].
func seenIn(owner []int, to int) []int {
	return mustWhere(owner, func(_, b int) bool { return b <= to })
}

// mustWhere lists the must ordinals in owner whose lines [a, b) pass ok; a
// field's lines are consecutive.
func mustWhere(owner []int, ok func(a, b int) bool) []int {
	var out []int
	for a := 0; a < len(owner); {
		b := a + 1
		for b < len(owner) && owner[b] == owner[a] {
			b++
		}
		if owner[a] > 0 && ok(a, b) {
			out = append(out, owner[a])
		}
		a = b
	}
	return out
}
