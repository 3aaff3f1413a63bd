// Package preview shows what a write or edit ask would change: the new
// content or edit the child sent in its payload, as a unified diff against
// the file as it is now. Computing the diff is pure; reading the current file
// is a separate, bounded step the console runs in a command.
package preview

import (
	"bytes"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/aymanbagabas/go-udiff"
	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// MaxFileSize caps the current file read for a diff; a larger file gets no
// diff, only a note.
const MaxFileSize = 1 << 20

// MaxLines caps the lines of a diff kept for display.
const MaxLines = 2000

// maxEditWork bounds the bytes that applying edits may scan and copy: each
// edit goes over the whole text, so a request of many tiny edits would
// otherwise cost edits × file size (the preview runs for every arriving
// ask). 64 MiB is about 64 edits of a 1 MiB file, 6,500 of a 10 KiB one.
const maxEditWork = 64 << 20

// Change is what a write or edit ask would do, taken from the child's
// payload: whole new content (write) or text replacements (edit).
type Change struct {
	Tool    string // write or edit
	Path    string // absolute: the ask's boundary value or absolute match value
	Content *string
	Edits   []Edit
}

// Edit replaces Old, which must occur once in the file, with New.
type Edit struct {
	Old string `json:"oldText"`
	New string `json:"newText"`
}

// Kind is the role of a diff line.
type Kind byte

const (
	Context Kind = ' '
	Added   Kind = '+'
	Removed Kind = '-'
	Hunk    Kind = '@'
	NoEOL   Kind = '\\'
)

// Line is one line of a diff, without its newline or prefix.
type Line struct {
	Kind Kind
	Text string
}

// Diff is the preview of one change.
type Diff struct {
	Path    string
	NewFile bool
	Lines   []Line
	// Note says why there is no diff, or what to keep in mind about it (the
	// child may cut its input preview short).
	Note string
}

// inputLabel is the evidence label under which children send a tool's input.
const inputLabel = "input"

// ChangeOf finds the change a write or edit ask would make. It reports false
// for any other ask, or when the payload carries no usable input.
func ChangeOf(req *wire.Request) (Change, bool) {
	if !Applies(req) {
		return Change{}, false
	}
	tool, path := *req.Payload.Request.ToolName, targetPath(req)
	for _, ev := range req.Payload.Evidence {
		if ev.Label != inputLabel {
			continue
		}
		if c, ok := parseInput(tool, ev.Text); ok {
			c.Path = path
			return c, true
		}
	}
	return Change{}, false
}

// Applies reports whether an ask is a write or edit of an absolute path,
// which ChangeOf may find a change in, without parsing the child's input.
func Applies(req *wire.Request) bool {
	if req == nil || req.Payload == nil || req.Payload.Request.ToolName == nil {
		return false
	}
	tool := *req.Payload.Request.ToolName
	return (tool == "write" || tool == "edit") && targetPath(req) != ""
}

// targetPath is the absolute path the ask names: the canonical boundary value,
// else the first absolute match value. Never derived from permtui's own cwd.
func targetPath(req *wire.Request) string {
	in := req.AccessIntent
	if in == nil {
		return ""
	}
	if in.BoundaryValue != nil && strings.HasPrefix(*in.BoundaryValue, "/") {
		return *in.BoundaryValue
	}
	for _, v := range in.MatchValues {
		if strings.HasPrefix(v, "/") {
			return v
		}
	}
	return ""
}

// toolInput is pi's write ({path, content}) and edit ({path, oldText,
// newText} or {path, edits: [{oldText, newText}]}) input.
type toolInput struct {
	Content *string `json:"content"`
	OldText *string `json:"oldText"`
	NewText *string `json:"newText"`
	Edits   []Edit  `json:"edits"`
}

func parseInput(tool, text string) (Change, bool) {
	c := Change{Tool: tool}
	var in toolInput
	isJSON := strings.HasPrefix(strings.TrimSpace(text), "{") && json.Unmarshal([]byte(text), &in) == nil
	switch {
	case tool == "write" && isJSON && in.Content != nil:
		c.Content = in.Content
	case tool == "write" && !isJSON:
		// Some children send the content itself as the input preview.
		c.Content = &text
	case tool == "edit" && isJSON && in.OldText != nil && in.NewText != nil:
		c.Edits = []Edit{{Old: *in.OldText, New: *in.NewText}}
	case tool == "edit" && isJSON && len(in.Edits) > 0:
		c.Edits = in.Edits
	default:
		return Change{}, false
	}
	return c, true
}

// Compute diffs the change against the current file content. readErr is the
// error of reading it (fs.ErrNotExist: a new file).
func Compute(c Change, current []byte, readErr error) Diff {
	d := Diff{Path: c.Path}
	switch {
	case errors.Is(readErr, fs.ErrNotExist):
		if c.Tool == "edit" {
			d.Note = "the file does not exist, so the edit would fail"
			return d
		}
		d.NewFile = true
		current = nil
	case readErr != nil:
		d.Note = "no diff: the current file cannot be read (" + readErr.Error() + ")"
		return d
	case isBinary(current):
		d.Note = "no diff: the current file is binary"
		return d
	}
	before := string(current)
	var after string
	switch {
	case c.Content != nil:
		after = *c.Content
	case len(c.Edits)*(len(before)+1) > maxEditWork:
		d.Note = "no diff: " + strconv.Itoa(len(c.Edits)) + " edits of a file this size are too many to preview"
		return d
	default:
		var refused string
		if after, refused = applyEdits(before, c.Edits); refused != "" {
			d.Note = "no diff: " + refused
			return d
		}
	}
	if isBinary([]byte(after)) {
		d.Note = "no diff: the new content is binary"
		return d
	}
	if before == after {
		d.Note = "no change: the content is what the file already holds"
		return d
	}
	d.Lines = parseUnified(udiff.Unified("current", "proposed", before, after))
	if len(d.Lines) > MaxLines {
		d.Note = "the diff is cut at " + strconv.Itoa(MaxLines) + " lines"
		d.Lines = compact(d.Lines[:MaxLines])
	}
	return d
}

// applyEdits applies edits to text as pi's edit tool does (decision 0188):
// every old text is found in the original text and must occur there once,
// the edits must not overlap, and each replaces its own place in the
// original. Otherwise pi refuses the whole edit, and refused says why.
func applyEdits(text string, edits []Edit) (after, refused string) {
	type match struct{ at, edit int }
	matches := make([]match, 0, len(edits))
	for i, e := range edits {
		which := "the edit's old text"
		if len(edits) > 1 {
			which = "edit " + strconv.Itoa(i+1) + "'s old text"
		}
		if e.Old == "" {
			return "", which + " is empty, so pi's edit tool refuses the edit"
		}
		switch n := strings.Count(text, e.Old); {
		case n == 0:
			return "", which + " is not in the current file as written; pi's edit tool then looks for it " +
				"ignoring line endings, trailing spaces and Unicode quote, dash and space variants, which is not " +
				"previewed here: the edit may still change the file"
		case n > 1:
			return "", which + " occurs " + strconv.Itoa(n) + " times in the current file; pi's edit tool " +
				"refuses an old text that is not unique, so the edit would fail and change nothing"
		}
		matches = append(matches, match{strings.Index(text, e.Old), i})
	}
	slices.SortStableFunc(matches, func(a, b match) int { return a.at - b.at })
	var b strings.Builder
	end := 0
	for k, m := range matches {
		if k > 0 && m.at < end {
			first, second := min(m.edit, matches[k-1].edit), max(m.edit, matches[k-1].edit)
			return "", "edits " + strconv.Itoa(first+1) + " and " + strconv.Itoa(second+1) + " overlap; " +
				"pi's edit tool refuses overlapping edits, so the edit would fail and change nothing"
		}
		b.WriteString(text[end:m.at])
		b.WriteString(edits[m.edit].New)
		end = m.at + len(edits[m.edit].Old)
	}
	b.WriteString(text[end:])
	return b.String(), ""
}

// compact copies lines into fresh memory: each line's text is a substring of
// the whole diff text, which a cut-off diff would otherwise keep alive.
func compact(lines []Line) []Line {
	n := 0
	for _, l := range lines {
		n += len(l.Text)
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range lines {
		b.WriteString(l.Text)
	}
	all := b.String()
	out := make([]Line, len(lines))
	for i, l := range lines {
		out[i] = Line{Kind: l.Kind, Text: all[:len(l.Text)]}
		all = all[len(l.Text):]
	}
	return out
}

// Size is about how many bytes the diff keeps alive: its lines (with the
// prefix and newline of the diff text they come from), their slice, the
// path and the note.
func (d Diff) Size() int {
	n := len(d.Path) + len(d.Note) + cap(d.Lines)*int(unsafe.Sizeof(Line{})) + len("--- current\n+++ proposed\n")
	for _, l := range d.Lines {
		n += len(l.Text) + 2
	}
	return n
}

// isBinary: a NUL byte or invalid UTF-8 in the first 8 KiB, as git guesses.
func isBinary(data []byte) bool {
	const sniff = 8192
	head := data[:min(len(data), sniff)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if len(data) > sniff {
		// The sniffed prefix may end inside a multi-byte rune.
		for cut := 0; cut < utf8.UTFMax && !utf8.Valid(head); cut++ {
			head = head[:len(head)-1]
		}
	}
	return !utf8.Valid(head)
}

// parseUnified turns udiff's text into lines, dropping the file headers.
func parseUnified(text string) []Line {
	var lines []Line
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "), l == "":
		case strings.HasPrefix(l, "@@"):
			lines = append(lines, Line{Kind: Hunk, Text: l})
		default:
			lines = append(lines, Line{Kind: Kind(l[0]), Text: l[1:]})
		}
	}
	return lines
}

// ElsewhereError is the read error of a file on another host: an ask a
// relay sent over the hub names a path on its own machine, and a file at
// that path here is another file, so no diff is computed against it.
type ElsewhereError struct{ Host string }

func (e ElsewhereError) Error() string {
	return "the file is on host " + e.Host + ", not on this machine; the child's change is in the evidence"
}

// ReadFor reads the current file of a change asked about on host ("" for
// this machine) with read; a file on another host is an ElsewhereError.
func ReadFor(host, path string, read func(string) ([]byte, error)) ([]byte, error) {
	if host != "" {
		return nil, ElsewhereError{Host: host}
	}
	return read(path)
}

// ReadCurrent reads the file a change targets, as the safe-read rules say: a
// regular file, not through a symlink at the last component, at most
// MaxFileSize bytes. Run it off the UI goroutine.
func ReadCurrent(path string) ([]byte, error) {
	return safefs.ReadRegularFile(path, MaxFileSize)
}
