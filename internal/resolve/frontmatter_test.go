package resolve

import (
	"fmt"
	"strings"
	"testing"
)

// ReadFrontmatter gives each key its line, its parent and the last line of
// what it holds, so an editor can insert after a block or replace a line.
func TestReadFrontmatterSpans(t *testing.T) {
	text := strings.Join([]string{
		"---", // 0
		"name: a",
		"permission:", // 2
		"  # a comment",
		"  bash:", // 4
		`    "git *": allow`,
		"    rm *:", // 6
		"      action: deny",
		"      reason: 'no'", // 8
		"  read: ask",
		"description: x", // 10
		"---",
		"body",
	}, "\r\n")
	fm, err := ReadFrontmatter(text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range fm.Keys {
		got = append(got, fmt.Sprintf("%d %q %q %q %d-%d", k.Parent, k.Lead, k.Key, k.Value, k.Line, k.Last))
	}
	want := []string{
		`-1 "" "name" "a" 1-1`,
		`-1 "" "permission" "" 2-9`,
		`1 "  " "bash" "" 4-8`,
		`2 "    " "git *" "allow" 5-5`,
		`2 "    " "rm *" "" 6-8`,
		`4 "      " "action" "deny" 7-7`,
		`4 "      " "reason" "'no'" 8-8`,
		`1 "  " "read" "ask" 9-9`,
		`-1 "" "description" "x" 10-10`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || fm.End != 11 {
		t.Errorf("keys:\n%s\nend %d; want:\n%s\nend 11", strings.Join(got, "\n"), fm.End, strings.Join(want, "\n"))
	}
	for text, want := range map[string]string{"\n---\n": "does not start", "---": "does not start", "---\na: b\n": "no closing"} {
		if _, err := ReadFrontmatter(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFrontmatter(%q) = %v, want %q", text, err, want)
		}
	}
}
