package ui

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
)

// The README and docs/console.md show golden captures; keep them in step.
func TestDocsShowCurrentGoldens(t *testing.T) {
	for doc, goldens := range map[string][]string{
		"../../README.md":       {"TestGoldenThreePending"},
		"../../docs/console.md": {"TestGoldenThreePending", "TestGoldenScopeChoice"},
	} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range goldens {
			capture, err := os.ReadFile("testdata/" + name + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(text), "```text\n"+string(capture)+"\n```") {
				t.Errorf("%s does not show the current %s capture", doc, name)
			}
		}
	}
}

// Every key binding appears in the README's key table.
func TestReadmeKeyTableCoversTheKeyMap(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(text), "### Keys")
	if start < 0 {
		t.Fatal("README has no key table")
	}
	table := string(text[start:])
	km := reflect.ValueOf(DefaultKeyMap())
	for i := 0; i < km.NumField(); i++ {
		b := km.Field(i).Interface().(key.Binding)
		for _, k := range b.Keys() {
			name := map[string]string{" ": "space", "up": "↑", "down": "↓"}[k]
			if name == "" {
				name = k
			}
			if !strings.Contains(table, "`"+name+"`") && !strings.Contains(table, "`"+b.Help().Key+"`") {
				t.Errorf("key %q (%s) is missing from the README's key table", name, km.Type().Field(i).Name)
			}
		}
	}
}
