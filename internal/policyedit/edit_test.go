package policyedit

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscale/hujson"

	"github.com/permtui/permtui/internal/resolve"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestEditGolden edits each sample file and compares the result with its
// golden file: only the touched lines differ, comments, order, indentation
// and trailing commas stay.
func TestEditGolden(t *testing.T) {
	npm := Rule{Surface: "bash", Pattern: "npm install *", Action: resolve.Allow}
	cases := []struct {
		file string
		rule Rule
	}{
		{"comments.jsonc", npm},
		{"trailing-commas.jsonc", npm}, // the deny moves to the end, as an allow
		{"string-surface.jsonc", npm},
		{"compact.jsonc", Rule{Surface: "skill", Pattern: "deploy", Action: resolve.Deny, Reason: "ask the release manager"}},
		{"no-permission.jsonc", Rule{Surface: "path_write", Pattern: "/w/p/src/*", Action: resolve.Allow}},
		{"moved-comments.jsonc", npm}, // comments go with the line they sit on
		{"readd-last.jsonc", npm},     // the same rule again: nothing changes
		{"crlf.jsonc", npm},           // new lines end as the file's do
		{"agent.md", npm},
		{"agent-none.md", npm},
		{"agent-string.md", Rule{Surface: "bash", Pattern: "git push *", Action: resolve.Deny, Reason: "CI pushes"}},
		{"agent-crlf.md", Rule{Surface: "bash", Pattern: "npm *", Action: resolve.Allow}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "edit", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var out []byte
			if strings.HasSuffix(c.file, ".md") {
				var s string
				s, err = editFrontmatter(string(in), c.rule)
				out = []byte(s)
			} else {
				out, err = editConfig(in, c.rule)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "edit", c.file+".golden")
			if *update {
				if err := os.WriteFile(golden, out, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != string(want) {
				t.Errorf("edited %s:\n%s\nwant:\n%s", c.file, out, want)
			}
		})
	}
}

func TestNewConfigFile(t *testing.T) {
	out, err := editConfig([]byte(newConfig), Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"permission\": {\n    \"bash\": {\n      \"ls\": \"allow\"\n    }\n  }\n}\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestEditRefusals(t *testing.T) {
	allow := func(s, p string) Rule { return Rule{Surface: s, Pattern: p, Action: resolve.Allow} }
	for _, c := range []struct {
		name, text string
		rule       Rule
		want       string
	}{
		{"duplicate surface", `{"permission":{"bash":{},"bash":{}}}`, allow("bash", "ls"), "written twice"},
		{"duplicate pattern", `{"permission":{"bash":{"ls":"deny","ls":"ask"}}}`, allow("bash", "ls"), "written twice"},
		{"surface not a map", `{"permission":{"bash":["ls"]}}`, allow("bash", "ls"), "not a state or a pattern map"},
		{"surface bad state", `{"permission":{"bash":"maybe"}}`, allow("bash", "ls"), "not a state"},
		{"not an object", `[]`, allow("bash", "ls"), "not a JSON object"},
		{"colon in frontmatter", "---\nname: a\n---\n", allow("mcp", "exa:*"), "colon"},
		{"no frontmatter", "\n---\nname: a\n---\n", allow("bash", "ls"), "does not start"},
		{"unclosed", "---\nname: a\n", allow("bash", "ls"), "no closing"},
		{"permission string", "---\npermission: allow\n---\n", allow("bash", "ls"), "not a map"},
		{"inline comment", "---\npermission:\n  bash: allow # ok\n---\n", allow("bash", "ls"), "not a state pi reads"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if strings.HasPrefix(c.text, "---") || strings.HasPrefix(c.text, "\n") {
				_, err = editFrontmatter(c.text, c.rule)
			} else {
				_, err = editConfig([]byte(c.text), c.rule)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestRuleValidate(t *testing.T) {
	for _, r := range []Rule{
		{Surface: "", Pattern: "x", Action: resolve.Allow},
		{Surface: "*", Pattern: "x", Action: resolve.Allow},
		{Surface: "bash", Pattern: "", Action: resolve.Allow},
		{Surface: "bash", Pattern: "x", Action: "maybe"},
		{Surface: "bash", Pattern: "x", Action: resolve.Allow, Reason: "no"},
		{Surface: "bash", Pattern: "x\x1b[31m", Action: resolve.Allow},
		{Surface: "bash", Pattern: "* \u202esutats tig", Action: resolve.Allow}, // shows as "* git status"
		{Surface: "bash", Pattern: "git\u200b *", Action: resolve.Allow},
		{Surface: "bash\u2028", Pattern: "x", Action: resolve.Allow},
		{Surface: "bash", Pattern: "x", Action: resolve.Deny, Reason: "see\u0085"},
		{Surface: "bash", Pattern: "x", Action: resolve.Deny, Reason: strings.Repeat("r", 501)},
		{Surface: "**", Pattern: "*", Action: resolve.Allow},
		{Surface: "mcp__*", Pattern: "*", Action: resolve.Allow},
		{Surface: " bash", Pattern: "x", Action: resolve.Allow},
	} {
		if r.Validate() == nil {
			t.Errorf("%+v validated", r)
		}
	}
	// Unicode's Default_Ignorable_Code_Point, the Hangul fillers and the
	// braille blank all print as nothing (issue 18).
	for _, c := range []rune{'\u3164', '\u2800', '\u115f', '\u1160', '\uffa0', '\u034f', '\ufe0f', '\u180b', '\U000e0100', '\u00ad'} {
		r := Rule{Surface: "bash", Pattern: "git" + string(c) + " *", Action: resolve.Allow}
		if r.Validate() == nil {
			t.Errorf("%U validated", c)
		}
	}
	for _, r := range []Rule{
		{Surface: "bash", Pattern: "git status", Action: resolve.Allow},
		{Surface: "read", Pattern: "~/notes/é*", Action: resolve.Allow},
		{Surface: "mcp__github__search", Pattern: "*", Action: resolve.Allow},
	} {
		if err := r.Validate(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

// TestEditMixedLayout: a map whose first member shares the brace's line and
// whose later ones have their own lines keeps every comment and parses.
func TestEditMixedLayout(t *testing.T) {
	for _, text := range []string{
		"{\"permission\": {\"bash\": {\"*\": \"ask\",\n  // c\n  \"ls\": \"deny\" }}}",
		"{\"permission\": {\"bash\": {\n\"ls\": \"deny\", \"*\": \"ask\" /* c */ }}}",
		"{\"permission\": {\"bash\": {\n  \"ls\": \"deny\" // c\n}}}",
	} {
		out, err := editConfig([]byte(text), Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow})
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if !strings.Contains(string(out), `"ls": "allow"`) {
			t.Errorf("%q → %q", text, out)
		}
		if _, err := hujson.Parse(out); err != nil {
			t.Errorf("%q → %q: %v", text, out, err)
		}
		if strings.Count(string(out), "/") != strings.Count(text, "/") {
			t.Errorf("%q → %q: a comment was lost", text, out)
		}
	}
}

// TestDiffShowsOnlyTheAddedLines: an insertion after a line shows as added
// lines, not as that line taken out and put back.
func TestDiffShowsOnlyTheAddedLines(t *testing.T) {
	old := "---\nname: b\npermission:\n  bash:\n    git: allow\n---\n"
	ch := Change{Target: Target{File: "b.md"}, Real: "b.md", Old: []byte(old), New: []byte(strings.Replace(old, "allow\n", "allow\n    \"ls\": allow\n", 1))}
	d := ch.Diff()
	if strings.Contains(d, "\n-") || !strings.Contains(d, "\n+    \"ls\": allow\n") {
		t.Errorf("diff:\n%s", d)
	}
}

// TestAMovedMemberKeepsItsComments (issue 18): a pattern already in its map
// moves last with the comments around it, however the object is laid out.
func TestAMovedMemberKeepsItsComments(t *testing.T) {
	for _, in := range []string{
		`{"permission": {"bash": {"*": "ask", /* keep */ "rm *": "ask"}}}`,
		`{"permission": {"bash": {/* keep */ "rm *": "ask", "*": "ask"}}}`,
		"{\"permission\": {\"bash\": {\n  \"*\": \"ask\",\n  // keep\n  \"rm *\": \"ask\"}}}\n",
		"{\"permission\": {\"bash\": {\n  // keep\n  \"rm *\": \"ask\", // trailing\n  \"*\": \"ask\"}}}\n",
		"{\"permission\": {\"bash\": {\n  \"*\": \"ask\", /* keep */ \"rm *\": \"ask\",\n  \"ls\": \"ask\"\n}}}\n",
	} {
		out, err := editConfig([]byte(in), Rule{Surface: "bash", Pattern: "rm *", Action: resolve.Deny})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"keep", "trailing"} {
			if strings.Contains(in, c) && !strings.Contains(string(out), c) {
				t.Errorf("comment %q dropped:\n%s\n→\n%s", c, in, out)
			}
		}
		if !strings.HasSuffix(strings.TrimRight(strings.TrimRight(string(out), "}\n "), "}\n "), `"rm *": "deny"`) && !strings.Contains(string(out), `"rm *": "deny" // trailing`) {
			t.Errorf("not moved last:\n%s", out)
		}
	}
}

// The editor finds keys where pi's parser does: U+0085 is no JavaScript
// space, so "\u0085bash" is another surface, and the edit adds a bash line
// rather than rewriting that one.
func TestEditFrontmatterReadsKeysAsPi(t *testing.T) {
	text := "---\npermission:\n  \u0085bash: deny\n---\n"
	out, err := editFrontmatter(text, Rule{Surface: "bash", Pattern: "ls", Action: resolve.Allow})
	if err != nil {
		t.Fatal(err)
	}
	want := "---\npermission:\n  \u0085bash: deny\n  bash:\n    \"ls\": allow\n---\n"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
