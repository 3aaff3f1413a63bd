package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/teatest"

	"github.com/permtui/permtui/internal/serve"
)

const appSource = "import { a } from './a';\n\nexport const x = 1;\nexport const y = a(x);\n"

// hunkHeader is drawn only once the file was read and diffed: a golden of
// editAsk waits for it, not for the edit's text, which the evidence shows
// before the diff is ready.
const hunkHeader = "@@ -1,4 +1,4 @@"

// editAsk edits /w/p/src/app.ts: x = 1 becomes x = 2.
func editAsk() serve.Ask {
	a := pathWrite()
	a.ID += 10
	p := a.Request.Payload
	p.Request.ToolName = sp("edit")
	p.Evidence[0].Text = `{"path":"src/app.ts","oldText":"export const x = 1;","newText":"export const x = 2; // was 1"}`
	return a
}

func oneFile(path, content string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if p == path {
			return []byte(content), nil
		}
		return noFiles(p)
	}
}

// The file is read in a command, never in Update, and the diff shows in the
// detail and the full view with +/- prefixes that read without colour.
func TestEditAskShowsItsDiff(t *testing.T) {
	reads := 0
	h := newHarness(t, func(o *Options) {
		read := oneFile("/w/p/src/app.ts", appSource)
		o.ReadFile = func(p string) ([]byte, error) { reads++; return read(p) }
	})
	_, cmd := h.m.Update(EventMsg{Event: serve.AskQueued{Ask: editAsk()}})
	if reads != 0 {
		t.Fatal("Update read the file")
	}
	h.run(cmd)
	if reads != 1 {
		t.Fatalf("the preview command read %d files", reads)
	}
	for _, screen := range []string{"detail", "full view"} {
		if screen == "full view" {
			h.keys("v")
		}
		v := h.m.View()
		for _, want := range []string{"change    @@ -1,4 +1,4 @@  (against the file as it is now)", "- export const x = 1;", "+ export const x = 2; // was 1"} {
			if !strings.Contains(v, want) {
				t.Fatalf("%s lacks %q:\n%s", screen, want, v)
			}
		}
	}
}

// A write to a file that does not exist is all additions; an edit whose old
// text is gone says so instead of a diff.
func TestNewFileAndStaleEdit(t *testing.T) {
	h := newHarness(t)
	h.queue(pathWrite())
	if v := h.m.View(); !strings.Contains(v, "(a new file: every line added)") || !strings.Contains(v, "+ export const x = 1;") {
		t.Fatalf("new file not shown as additions:\n%s", v)
	}
	s := newHarness(t, func(o *Options) { o.ReadFile = oneFile("/w/p/src/app.ts", "something else\n") })
	s.queue(editAsk())
	s.keys("v")
	if v := s.m.View(); !strings.Contains(v, "is not in the current file") {
		t.Fatalf("stale edit not explained:\n%s", v)
	}
}

func TestGoldenEditDiff(t *testing.T) {
	screen(t, 80, 24, hunkHeader, func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, editAsk())
		press(tm, "v")
	}, func(o *Options) { o.ReadFile = oneFile("/w/p/src/app.ts", appSource) })
}

// An ask from a relay names a path on the relay's machine: a file at that
// path here is another file, so the console reads nothing and says where
// the file is, rather than a diff against the wrong file.
func TestAChangeOnAnotherHostIsNotDiffedAgainstAFileHere(t *testing.T) {
	reads := 0
	h := newHarness(t, func(o *Options) {
		read := oneFile("/w/p/src/app.ts", appSource)
		o.ReadFile = func(p string) ([]byte, error) { reads++; return read(p) }
		o.FileStamp = func(string) string { reads++; return "" }
	})
	a := editAsk()
	a.Host = "alpha"
	h.queue(a)
	if reads != 0 {
		t.Fatalf("the console read or stamped %d local files for a change on host alpha", reads)
	}
	h.keys("v")
	v := h.m.View()
	if !strings.Contains(v, "the file is on host alpha") || strings.Contains(v, "- export const x = 1;") {
		t.Fatalf("the change on alpha:\n%s", v)
	}
}
