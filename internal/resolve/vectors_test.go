package resolve

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

// vectorsDir finds ../shared/spec/vectors next to the module root.
func vectorsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "spec", "vectors")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// readJSONL decodes every line of a vectors file into T.
func readJSONL[T any](t *testing.T, name string) []T {
	t.Helper()
	f, err := os.Open(filepath.Join(vectorsDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v in %s", name, err, sc.Text())
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no vectors", name)
	}
	return out
}

type matcherVector struct {
	ID      string `json:"id"`
	Pattern string `json:"pattern"`
	Value   string `json:"value"`
	Match   bool   `json:"match"`
	Home    string `json:"home"`
}

func TestMatcherVectors(t *testing.T) {
	for _, v := range readJSONL[matcherVector](t, "matcher.jsonl") {
		if got := MatchPattern(v.Pattern, v.Value, v.Home); got != v.Match {
			t.Errorf("%s: match(%q, %q) = %v, want %v", v.ID, v.Pattern, v.Value, got, v.Match)
		}
	}
}

type rulesetVector struct {
	ID            string            `json:"id"`
	Home          string            `json:"home"`
	Global        json.RawMessage   `json:"global"`
	GlobalText    *string           `json:"globalText"`
	Project       json.RawMessage   `json:"project"`
	Agents        map[string]string `json:"agents"`
	ProjectAgents map[string]string `json:"projectAgents"`
	Yolo          bool              `json:"yolo"`
	Grants        []wire.Grant      `json:"grants"`
	Agent         string            `json:"agent"`
	Surface       string            `json:"surface"`
	Values        []string          `json:"values"`
	Floor         *string           `json:"floor"`
	AskingUnits   []struct {
		Command string  `json:"command"`
		Floor   *string `json:"floor"`
	} `json:"askingUnits"`
	Intent        string           `json:"intent"`
	Expect        Action           `json:"expect"`
	Reason        *string          `json:"reason"`
	Pattern       json.RawMessage  `json:"pattern"` // absent, null or a string
	Origin        *string          `json:"origin"`
	Member        *string          `json:"member"`
	ResponseState *wire.State      `json:"responseState"`
	RawIntent     *json.RawMessage `json:"rawAccessIntent"`
}

// writeConfigField writes a vector's config field as a file: a JSON string
// is the raw file text, an object is written byte for byte (keeping order).
func writeConfigField(t *testing.T, path string, raw json.RawMessage) {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	data := []byte(raw)
	var text string
	if json.Unmarshal(raw, &text) == nil {
		data = []byte(text)
	}
	writeFile(t, path, data)
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (v rulesetVector) policy(t *testing.T) *Policy {
	root := t.TempDir()
	opts := LoadOptions{AgentDir: filepath.Join(root, "agent"), ProjectDir: filepath.Join(root, "proj"), TrustProject: true, Home: v.Home}
	if v.GlobalText != nil {
		writeFile(t, globalConfigPath(opts.AgentDir), []byte(*v.GlobalText))
	} else {
		writeConfigField(t, globalConfigPath(opts.AgentDir), v.Global)
	}
	writeConfigField(t, projectConfigPaths(opts.ProjectDir)[0], v.Project)
	for name, text := range v.Agents {
		writeFile(t, filepath.Join(opts.AgentDir, "agents", name+".md"), []byte(text))
	}
	for name, text := range v.ProjectAgents {
		writeFile(t, filepath.Join(opts.ProjectDir, ".pi", "agents", name+".md"), []byte(text))
	}
	return Load(opts)
}

func TestRulesetVectors(t *testing.T) {
	for _, v := range readJSONL[rulesetVector](t, "ruleset.jsonl") {
		t.Run(v.ID, func(t *testing.T) {
			p := v.policy(t)
			if yolo, _ := p.Yolo(); yolo != v.Yolo {
				t.Errorf("yolo = %v, want %v", yolo, v.Yolo)
			}
			var got Verdict
			if v.Intent != "" {
				text := `{"id":"` + v.ID + `","createdAt":1,"requesterSessionId":"c","targetSessionId":"t","requesterAgentName":"a"`
				if v.RawIntent != nil {
					text += `,"accessIntent":` + string(*v.RawIntent)
				}
				req, err := wire.ParseRequest([]byte(text + "}"))
				if err != nil || req.AccessIntent != nil {
					t.Fatalf("ParseRequest = %+v, %v; want a request without a usable intent", req, err)
				}
				got = p.Resolve(req, v.Grants)
				if !strings.Contains(got.Explanation, "the request carries no facts") {
					t.Errorf("explanation %q does not say the request has no facts", got.Explanation)
				}
				if got.Rule != nil || got.DecidedBy() != nil {
					t.Errorf("a request without facts got a rule: %+v", got.Rule)
				}
			} else {
				intent := &wire.AccessIntent{Surface: v.Surface, MatchValues: v.Values, Floor: v.Floor,
					Principal: wire.Principal{SessionID: "s", AgentName: v.Agent}}
				for _, u := range v.AskingUnits {
					intent.AskingUnits = append(intent.AskingUnits, wire.AskingUnit{Command: u.Command, Floor: u.Floor})
				}
				got = p.Resolve(&wire.Request{ID: v.ID, AccessIntent: intent}, v.Grants)
			}
			if got.Action != v.Expect {
				t.Fatalf("action = %s, want %s\n%s", got.Action, v.Expect, got.Explanation)
			}
			if got.Explanation == "" {
				t.Error("empty explanation")
			}
			if v.Reason != nil && got.Reason != *v.Reason {
				t.Errorf("reason = %q, want %q", got.Reason, *v.Reason)
			}
			if len(v.Pattern) > 0 {
				var want *string
				if err := json.Unmarshal(v.Pattern, &want); err != nil {
					t.Fatal(err)
				}
				if (want == nil) != (got.Pattern == nil) || (want != nil && *want != *got.Pattern) {
					t.Errorf("pattern = %v, want %v\n%s", deref(got.Pattern), deref(want), got.Explanation)
				}
			}
			if v.Origin != nil && got.Origin != *v.Origin {
				t.Errorf("origin = %q, want %q\n%s", got.Origin, *v.Origin, got.Explanation)
			}
			if v.Member != nil && got.Member != *v.Member {
				t.Errorf("member = %q, want %q\n%s", got.Member, *v.Member, got.Explanation)
			}
			if v.ResponseState != nil {
				if state := responseStateOf(got); state != *v.ResponseState {
					t.Errorf("response state = %s, want %s", state, *v.ResponseState)
				}
			}
			if v.Intent == "" {
				d := got.DecidedBy()
				if d == nil || d.Kind != wire.DecidedByRule || d.Surface != v.Surface || deref(d.Pattern) != deref(got.Pattern) || deref(d.Origin) != got.Origin {
					t.Errorf("DecidedBy = %+v for verdict %+v", d, got)
				}
			}
		})
	}
}

// responseStateOf is the wire state an automatic answer takes (wire §8).
func responseStateOf(v Verdict) wire.State {
	switch {
	case v.Action == Allow:
		return wire.StateApproved
	case v.Action == Deny && v.Reason != "":
		return wire.StateDeniedWithReason
	case v.Action == Deny:
		return wire.StateDenied
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
