package preview

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

func ptr(s string) *string { return &s }

// ask builds a forwarded write or edit request whose payload carries input.
func ask(tool, path, input string) *wire.Request {
	return &wire.Request{
		ID: "r-1",
		Payload: &wire.Payload{
			Kind:     "path",
			Request:  wire.PayloadRequest{Surface: "path_write", ToolName: ptr(tool), Value: path},
			Evidence: []wire.Evidence{{Label: "input", Text: input}},
		},
		AccessIntent: &wire.AccessIntent{
			Surface:       "path_write",
			MatchValues:   []string{"src/a.go", path},
			BoundaryValue: ptr(path),
		},
	}
}

func render(d Diff) string {
	var b strings.Builder
	for _, l := range d.Lines {
		b.WriteByte(byte(l.Kind))
		if l.Kind != Hunk {
			b.WriteString(l.Text)
		} else {
			b.WriteString(strings.TrimPrefix(l.Text, "@"))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestChangeOfReadsPiToolInputs(t *testing.T) {
	for _, tc := range []struct {
		name, tool, input string
		want              Change
	}{
		{"write JSON", "write", `{"path":"/w/a.go","content":"package a\n"}`, Change{Tool: "write", Path: "/w/a.go", Content: ptr("package a\n")}},
		{"write plain", "write", "package a\n", Change{Tool: "write", Path: "/w/a.go", Content: ptr("package a\n")}},
		{"edit", "edit", `{"path":"/w/a.go","oldText":"a","newText":"b"}`, Change{Tool: "edit", Path: "/w/a.go", Edits: []Edit{{"a", "b"}}}},
		{"edits", "edit", `{"path":"/w/a.go","edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}]}`, Change{Tool: "edit", Path: "/w/a.go", Edits: []Edit{{"a", "b"}, {"c", "d"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ChangeOf(ask(tc.tool, "/w/a.go", tc.input))
			if !ok || got.Tool != tc.want.Tool || got.Path != tc.want.Path || (got.Content == nil) != (tc.want.Content == nil) ||
				(got.Content != nil && *got.Content != *tc.want.Content) || len(got.Edits) != len(tc.want.Edits) {
				t.Fatalf("got %+v %v, want %+v", got, ok, tc.want)
			}
			for i := range got.Edits {
				if got.Edits[i] != tc.want.Edits[i] {
					t.Fatalf("edit %d: %+v", i, got.Edits[i])
				}
			}
		})
	}
	for name, req := range map[string]*wire.Request{
		"bash":              {Payload: &wire.Payload{Request: wire.PayloadRequest{ToolName: ptr("bash")}}},
		"no payload":        {AccessIntent: &wire.AccessIntent{BoundaryValue: ptr("/w/a")}},
		"edit without JSON": ask("edit", "/w/a.go", "replace a with b"),
		"relative only":     {Payload: ask("write", "/w/a.go", "x").Payload, AccessIntent: &wire.AccessIntent{MatchValues: []string{"a.go"}}},
	} {
		if c, ok := ChangeOf(req); ok {
			t.Errorf("%s: got a change %+v", name, c)
		}
	}
}

func TestComputeDiffsAgainstTheCurrentFile(t *testing.T) {
	current := []byte("package a\n\nfunc A() int {\n\treturn 1\n}\n")
	c, _ := ChangeOf(ask("edit", "/w/a.go", `{"oldText":"return 1","newText":"return 2"}`))
	d := Compute(c, current, nil)
	want := "@@ -1,5 +1,5 @@\n package a\n \n func A() int {\n-\treturn 1\n+\treturn 2\n }\n"
	if got := render(d); got != want || d.NewFile || d.Note != "" {
		t.Fatalf("diff:\n%s\nwant:\n%s(note %q)", got, want, d.Note)
	}
}

func TestComputeNewFileIsAllAdditions(t *testing.T) {
	c, _ := ChangeOf(ask("write", "/w/new.go", `{"content":"a\nb\n"}`))
	d := Compute(c, nil, fs.ErrNotExist)
	if !d.NewFile || render(d) != "@@ -0,0 +1,2 @@\n+a\n+b\n" {
		t.Fatalf("%+v\n%s", d, render(d))
	}
}

func TestComputeSaysWhyThereIsNoDiff(t *testing.T) {
	edit, _ := ChangeOf(ask("edit", "/w/a.go", `{"oldText":"missing","newText":"x"}`))
	write, _ := ChangeOf(ask("write", "/w/a.go", `{"content":"same\n"}`))
	for name, tc := range map[string]struct {
		c       Change
		current []byte
		err     error
		want    string
	}{
		"old text absent": {edit, []byte("hello\n"), nil, "old text is not in the current file"},
		"edit of nothing": {edit, nil, fs.ErrNotExist, "the file does not exist"},
		"unreadable":      {write, nil, errors.New("permission denied"), "cannot be read (permission denied)"},
		"binary":          {write, []byte("\x00\x01ELF"), nil, "binary"},
		"no change":       {write, []byte("same\n"), nil, "no change"},
	} {
		d := Compute(tc.c, tc.current, tc.err)
		if len(d.Lines) != 0 || !strings.Contains(d.Note, tc.want) {
			t.Errorf("%s: note %q lines %d, want %q", name, d.Note, len(d.Lines), tc.want)
		}
	}
}

func TestComputeCapsHugeDiffs(t *testing.T) {
	c, _ := ChangeOf(ask("write", "/w/a.txt", `{"content":"`+strings.Repeat(`x\n`, 3*MaxLines)+`"}`))
	d := Compute(c, nil, fs.ErrNotExist)
	if len(d.Lines) != MaxLines || !strings.Contains(d.Note, "cut") {
		t.Fatalf("%d lines, note %q", len(d.Lines), d.Note)
	}
}

func TestIsBinaryToleratesARuneCutAtTheSniffLimit(t *testing.T) {
	text := []byte(strings.Repeat("a", 8191) + "é" + "tail")
	if isBinary(text) {
		t.Fatal("UTF-8 text cut mid-rune by the sniff window read as binary")
	}
	if !isBinary([]byte("ok\xff\xfe")) {
		t.Fatal("invalid UTF-8 not binary")
	}
}

func TestReadCurrentRefusesLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.WriteFile(real, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadCurrent(real); err != nil || string(data) != "secret" {
		t.Fatalf("regular file: %q %v", data, err)
	}
	if _, err := ReadCurrent(link); err == nil {
		t.Fatal("read through a symlink")
	}
	if _, err := ReadCurrent(dir); err == nil {
		t.Fatal("read a directory")
	}
	if _, err := ReadCurrent(filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("absent file: %v", err)
	}
}

// Each edit rescans and copies the whole text, so a request of 1 MiB with
// 30,000 one-letter edits kept a core busy for half a minute per ask (it
// runs for every arriving write or edit ask). Work beyond a budget is not
// previewed, and the note says why.
func TestComputeBoundsTheWorkOfManyEdits(t *testing.T) {
	edits := make([]Edit, 5000)
	for i := range edits {
		edits[i] = Edit{Old: "a", New: "b"}
	}
	current := []byte(strings.Repeat("a", 64<<10))
	d := Compute(Change{Tool: "edit", Path: "/w/a.txt", Edits: edits}, current, nil)
	if len(d.Lines) != 0 || !strings.Contains(d.Note, "5000 edits") {
		t.Fatalf("note %q, %d lines", d.Note, len(d.Lines))
	}
	// A few edits of a large file are still shown (each old text occurs
	// once: pi refuses one that does not).
	var large strings.Builder
	for i := range 128 << 10 {
		fmt.Fprintf(&large, "%07d\n", i)
	}
	few := []Edit{{"0000001\n", "b\n"}, {"0065536\n", "b\n"}, {"0131071\n", "b\n"}}
	d = Compute(Change{Tool: "edit", Path: "/w/a.txt", Edits: few}, []byte(large.String()), nil)
	if len(d.Lines) == 0 {
		t.Fatalf("no diff for 3 edits of 1 MiB: %q", d.Note)
	}
}

// A diff cut at MaxLines keeps its lines, not the whole diff text they were
// cut from, and Size is about what it keeps: the console budgets the diffs
// it keeps by Size.
func TestCutDiffKeepsOnlyItsLinesAndSizeCountsThem(t *testing.T) {
	line := strings.Repeat("y", 500) + `\n`
	c, _ := ChangeOf(ask("write", "/w/a.txt", `{"content":"`+strings.Repeat(line, 3*MaxLines)+`"}`))
	before := testkit.LiveHeap()
	d := Compute(c, nil, fs.ErrNotExist)
	kept := testkit.LiveHeap() - before
	texts := 0
	for _, l := range d.Lines {
		texts += len(l.Text)
	}
	if len(d.Lines) != MaxLines || d.Size() < texts {
		t.Fatalf("%d lines, Size %d under the %d bytes of text", len(d.Lines), d.Size(), texts)
	}
	// The diff text was three times what is kept. Size is what is kept,
	// both ways: an overcount would leave the console's budget unused.
	if kept > uint64(d.Size())*3/2 || kept < uint64(d.Size())/2 {
		t.Fatalf("a cut diff keeps %d bytes live; its Size is %d", kept, d.Size())
	}
	runtime.KeepAlive(d)
	runtime.KeepAlive(c)
}

// BenchmarkComputeAllLinesChanged: the cost of one preview when every line
// of a 1 MiB file changes, with long lines and with one-byte lines (the
// worst tried). Run with -benchmem; the console computes two at a time.
func BenchmarkComputeAllLinesChanged(b *testing.B) {
	for _, width := range []int{50, 2} {
		b.Run(fmt.Sprintf("line=%dB", width), func(b *testing.B) {
			n := (1 << 20) / width
			before := strings.Repeat(strings.Repeat("a", width-1)+"\n", n)
			after := strings.Repeat(strings.Repeat("b", width-1)+"\n", n)
			c := Change{Tool: "write", Path: "/w/a", Content: &after}
			for b.Loop() {
				Compute(c, []byte(before), nil)
			}
		})
	}
}

// after is the text a diff leads to: its unchanged and added lines (the
// whole file when the diff has every line as context or change).
func after(d Diff) string {
	var b strings.Builder
	for _, l := range d.Lines {
		if l.Kind == Context || l.Kind == Added {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}

// An edit is applied as pi's edit tool applies it (pi-coding-agent 1.6.0,
// run on these cases): every old text must occur once in the file as it
// is, edits must not overlap, and each replaces its place in the original
// text, not in the text earlier edits made. Otherwise pi refuses the edit
// and the note says so.
func TestComputeAppliesEditsAsPiDoes(t *testing.T) {
	edit := func(current string, edits ...Edit) Diff {
		return Compute(Change{Tool: "edit", Path: "/w/a.ts", Edits: edits}, []byte(current), nil)
	}
	d := edit("x = 1;\ny = 2;\nx = 1;\nx = 1;\n", Edit{"x = 1;", "x = 9;"})
	if len(d.Lines) != 0 || !strings.Contains(d.Note, "the edit's old text occurs 3 times in the current file; pi's edit tool refuses an old text that is not unique, so the edit would fail and change nothing") {
		t.Errorf("a non-unique old text: note %q, %d lines", d.Note, len(d.Lines))
	}
	d = edit("a\nb\nb\n", Edit{"a", "z"}, Edit{"b", "x"})
	if len(d.Lines) != 0 || !strings.Contains(d.Note, "edit 2's old text occurs 2 times") {
		t.Errorf("a non-unique old text among several edits: note %q", d.Note)
	}
	if d = edit("A\nB\n", Edit{"A", "B\nA"}, Edit{"B\n", "C\n"}); after(d) != "B\nA\nC\n" || d.Note != "" {
		t.Errorf("edits applied to the text earlier edits made: leads to %q (note %q), pi writes %q", after(d), d.Note, "B\nA\nC\n")
	}
	for _, edits := range [][]Edit{{{"abc", "1"}, {"cde", "2"}}, {{"cde", "2"}, {"abc", "1"}}, {{"bc", "x"}, {"bc", "y"}}} {
		d = edit("abcdef\n", edits...)
		if len(d.Lines) != 0 || !strings.Contains(d.Note, "edits 1 and 2 overlap") {
			t.Errorf("overlapping edits %q: note %q, leads to %q", edits, d.Note, after(d))
		}
	}
	// pi matches an old text not found as written after normalizing
	// quotes, dashes and trailing spaces: it may still change the file.
	d = edit("x = \u201chi\u201d;\n", Edit{`x = "hi";`, "x = 1;"})
	if len(d.Lines) != 0 || strings.Contains(d.Note, "would fail") || !strings.Contains(d.Note, "may still change the file") {
		t.Errorf("an old text pi matches after normalizing: note %q", d.Note)
	}
}
