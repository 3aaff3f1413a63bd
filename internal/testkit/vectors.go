// Package testkit is shared test support, imported only by tests: the
// conformance vectors (the project's own copy in testdata/vectors, with
// ruleset vectors laid out as real policy files), an event recorder, and a
// writer that goroutines and the test can share.
package testkit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	json "github.com/goccy/go-json"
)

// Dir is the project's copy of the conformance vectors, testdata/vectors at
// the module root, so a clone of the project alone runs every vector.
func Dir(t testing.TB) string {
	t.Helper()
	return filepath.Join(ModuleRoot(t), "testdata", "vectors")
}

// ModuleRoot is the directory holding go.mod above the test's directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// ReadJSONL decodes every non-blank line of a vectors file into T; an empty
// file fails the test, so no vector set can be skipped silently.
func ReadJSONL[T any](t testing.TB, name string) []T {
	t.Helper()
	return ReadJSONLFile[T](t, filepath.Join(Dir(t), name))
}

// ReadJSONLFile is ReadJSONL for a vectors file anywhere, such as a
// package's own testdata.
func ReadJSONLFile[T any](t testing.TB, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for line := range bytes.Lines(data) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no vectors", path)
	}
	return out
}

// Ruleset is one line of ruleset.jsonl.
type Ruleset struct {
	ID            string            `json:"id"`
	Home          string            `json:"home"`
	Global        json.RawMessage   `json:"global"`
	GlobalText    *string           `json:"globalText"`
	Project       json.RawMessage   `json:"project"`
	ProjectLocal  json.RawMessage   `json:"projectLocal"`  // config.local.json
	LegacyGlobal  json.RawMessage   `json:"legacyGlobal"`  // <agentDir>/pi-permissions.jsonc
	LegacyProject json.RawMessage   `json:"legacyProject"` // <cwd>/.pi/agent/pi-permissions.jsonc
	Agents        map[string]string `json:"agents"`
	ProjectAgents map[string]string `json:"projectAgents"`
	Yolo          bool              `json:"yolo"`
	Grants        []Grant           `json:"grants"`
	Agent         string            `json:"agent"`
	Surface       string            `json:"surface"`
	Values        []string          `json:"values"`
	Floor         *string           `json:"floor"`
	AskingUnits   []struct {
		Command string  `json:"command"`
		Floor   *string `json:"floor"`
	} `json:"askingUnits"`
	Intent        string           `json:"intent"`
	Expect        string           `json:"expect"`
	Reason        *string          `json:"reason"`
	Pattern       json.RawMessage  `json:"pattern"` // absent, null or a string
	Origin        *string          `json:"origin"`
	Member        *string          `json:"member"`
	ResponseState *string          `json:"responseState"`
	RawIntent     *json.RawMessage `json:"rawAccessIntent"`
}

// Grant is a recorded session grant. (The package stays free of wire so that
// wire's own tests can use it.)
type Grant struct {
	Surface string `json:"surface"`
	Pattern string `json:"pattern"`
}

// WriteFiles lays the vector's policy out as pi keeps it: the global config
// under agentDir, the project config under projectDir, and the agent files.
func (v Ruleset) WriteFiles(t testing.TB, agentDir, projectDir string) {
	t.Helper()
	global := filepath.Join(agentDir, "extensions", "pi-permission-system", "config.json")
	if v.GlobalText != nil {
		WriteFile(t, global, []byte(*v.GlobalText))
	} else {
		writeConfigField(t, global, v.Global)
	}
	writeConfigField(t, filepath.Join(projectDir, ".pi", "extensions", "pi-permission-system", "config.json"), v.Project)
	writeConfigField(t, filepath.Join(projectDir, ".pi", "extensions", "pi-permission-system", "config.local.json"), v.ProjectLocal)
	writeConfigField(t, filepath.Join(agentDir, "pi-permissions.jsonc"), v.LegacyGlobal)
	writeConfigField(t, filepath.Join(projectDir, ".pi", "agent", "pi-permissions.jsonc"), v.LegacyProject)
	for name, text := range v.Agents {
		WriteFile(t, filepath.Join(agentDir, "agents", name+".md"), []byte(text))
	}
	for name, text := range v.ProjectAgents {
		WriteFile(t, filepath.Join(projectDir, ".pi", "agents", name+".md"), []byte(text))
	}
}

// writeConfigField writes a vector's config field as a file: a JSON string
// is the raw file text, an object is written byte for byte (keeping order).
func writeConfigField(t testing.TB, path string, raw json.RawMessage) {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	data := []byte(raw)
	var text string
	if json.Unmarshal(raw, &text) == nil {
		data = []byte(text)
	}
	WriteFile(t, path, data)
}

// WriteFile writes data at path (0600), creating its directories (0700).
func WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
