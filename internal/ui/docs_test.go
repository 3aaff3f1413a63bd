package ui

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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

// internal/ui/README.md's layout table names every file of the package and
// no other, and every identifier it puts in backquotes is in the code, so
// the map of the package stays true as files and functions move.
func TestReadmeLayoutIsTheCode(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code.Write(data)
		if !strings.HasSuffix(f, "_test.go") && !strings.Contains(string(readme), "`"+f+"`") {
			t.Errorf("README.md's layout does not name %s", f)
		}
	}
	for _, m := range regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_.]*)`").FindAllStringSubmatch(string(readme), -1) {
		name := m[1]
		if strings.HasSuffix(name, ".go") {
			if _, err := os.Stat(name); err != nil {
				t.Errorf("README.md names %s, which is not a file of the package", name)
			}
			continue
		}
		ident := name[strings.LastIndex(name, ".")+1:]
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(ident) + `\b`).MatchString(code.String()) {
			t.Errorf("README.md names %s, which the code does not", name)
		}
	}
}
