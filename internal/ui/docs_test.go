package ui

import (
	"os"
	"strings"
	"testing"
)

// docs/console.md shows golden captures; keep it in step with them.
func TestConsoleDocShowsCurrentGoldens(t *testing.T) {
	doc, err := os.ReadFile("../../docs/console.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TestGoldenThreePending", "TestGoldenScopeChoice"} {
		capture, err := os.ReadFile("testdata/" + name + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```text\n"+string(capture)+"\n```") {
			t.Errorf("docs/console.md does not show the current %s capture", name)
		}
	}
}
