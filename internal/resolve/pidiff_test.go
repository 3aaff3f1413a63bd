package resolve

// The differential against pi itself: random policies judged by permtui and
// by the published pi-permission-system 20.7.3 (its own PermissionManager,
// ConfigStore and PermissionResolver on the same files, through
// testdata/pidiff.mts and ../shared/pi-peer). It runs only when asked
// (PERMTUI_PI_DIFF=1 after ../shared/pi-peer/setup.sh): it needs Node and
// the peer install. Every difference must be stricter than pi and of a
// documented kind.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// v20Unknown are the top-level keys 20.7.3's strict schema lacks: a file
// with one is rejected there and accepted by NEW, which permtui follows.
var v20Unknown = []string{"forwardingTimeoutMs", "promptMaxRows", "promptFieldMaxWidth", "reviewLogFieldMaxWidth",
	"commandEffects", "authorizerTrust", "authorizerChain"}

// surrogatePools are patterns and values made of lone surrogates, astral
// characters, U+FFFD, wildcards and home tokens.
func surrogatePools(r *rand.Rand, pl pools) pools {
	atoms := []string{loneHigh, loneLow, "😀", "\ufffd", "a", "*", "?", " ", "~/", "$HOME/"}
	gen := func(n int) string {
		var b strings.Builder
		for range 1 + r.IntN(n) {
			b.WriteString(pick(r, atoms))
		}
		return wire.ToValidWTF8(b.String())
	}
	pl.patterns, pl.values = nil, nil
	for range 200 {
		pl.patterns = append(pl.patterns, gen(4))
		pl.values = append(pl.values, strings.NewReplacer("*", "", "?", "").Replace(gen(5)))
	}
	return pl
}

type diffCase struct {
	ID       string `json:"id"`
	AgentDir string `json:"agentDir"`
	Cwd      string `json:"cwd"`
	Home     string `json:"home"`
	Surface  string `json:"surface"`
	Value    string `json:"value"`
}

func TestDifferentialAgainstPi(t *testing.T) {
	if os.Getenv("PERMTUI_PI_DIFF") == "" {
		t.Skip("set PERMTUI_PI_DIFF=1 (after ../shared/pi-peer/setup.sh) to judge random policies with pi 20.7.3 too")
	}
	tsx := filepath.Join(testkit.ModuleRoot(t), "..", "shared", "pi-peer", "tsx.sh")
	if _, err := os.Stat(tsx); err != nil {
		t.Skipf("no pi peer beside the module (%v)", err)
	}
	policies := testkit.EnvInt(t, "PERMTUI_PI_DIFF_POLICIES", 300)
	base := vectorPools(t)
	// 20.7.3 leaves ${HOME} literal; NEW expands it (ruleset vector B20).
	base.patterns = slices.DeleteFunc(slices.Clone(base.patterns), func(p string) bool { return strings.Contains(p, "${HOME}") })
	r := rand.New(rand.NewPCG(21, uint64(testkit.EnvInt(t, "PERMTUI_PROPERTY_SEED", 1))))
	dir := t.TempDir()
	var input bytes.Buffer
	verdicts := map[string]Verdict{}
	cases := map[string]diffCase{}
	for i := range policies {
		pl := base
		if i%2 == 1 {
			pl = surrogatePools(r, base)
		}
		// What 20.7.3 can judge: no config.local.json, agents or grants
		// (its serving node is agent-neutral), no NEW-only keys.
		g := pl.policy(r)
		g.local, g.agents, g.projectAgents, g.grants = nil, nil, nil, nil
		g.home = pick(r, []string{"/home/u", "/home/u/", "/", "/home/u//"})
		for _, c := range []*genConfig{g.global, g.project, g.legacy} {
			if c != nil {
				c.knobs = slices.DeleteFunc(c.knobs, func(k string) bool {
					for _, key := range v20Unknown {
						if strings.Contains(k, key) {
							return true
						}
					}
					return false
				})
			}
		}
		opts := g.write(t, filepath.Join(dir, fmt.Sprint(i)), false, nil)
		if r.IntN(40) == 0 && g.global != nil { // over the old 1 MiB cap
			testkit.WriteFile(t, GlobalConfigPath(opts.AgentDir), []byte("/*"+strings.Repeat("x", 1<<20+r.IntN(1<<20))+"*/"+g.global.render(false)))
		}
		p := Load(opts)
		for k := range 10 {
			// Surfaces whose value 20.7.3's serving node and NEW's read alike.
			c := diffCase{ID: fmt.Sprintf("%d-%d", i, k), AgentDir: opts.AgentDir, Cwd: opts.ProjectDir, Home: g.home,
				Surface: pick(r, []string{"bash", "bash", "skill", "task", "mcp__srv__tool", "*", "0"})}
			if r.IntN(2) == 0 {
				c.Value = fill(r, pl, pick(r, pl.patterns))
			} else {
				c.Value = pick(r, pl.values)
			}
			c.Value = wire.ToValidWTF8(c.Value) // what a request file can carry
			verdicts[c.ID] = p.Evaluate(Query{Surface: c.Surface, Values: []string{c.Value}}, nil)
			cases[c.ID] = c
			fmt.Fprintf(&input, `{"id":%q,"agentDir":%s,"cwd":%s,"home":%q,"surface":%s,"value":%s}`+"\n",
				c.ID, rawJSONString(c.AgentDir), rawJSONString(c.Cwd), c.Home, rawJSONString(c.Surface), rawJSONString(c.Value))
		}
	}
	cmd := exec.Command(tsx, filepath.Join("testdata", "pidiff.mts"))
	cmd.Stdin = &input
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pi driver: %v\n%s", err, stderr.Bytes())
	}
	kinds := map[string]int{}
	agree := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var res struct{ ID, State string }
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		v, c := verdicts[res.ID], cases[res.ID]
		delete(verdicts, res.ID)
		switch {
		case string(v.Action) == res.State:
			agree++
		case Restrictiveness(v.Action) < Restrictiveness(Action(res.State)):
			t.Errorf("permissive: %+v: pi %s, permtui %s\n%s", c, res.State, v.Action, v.Explanation)
		case v.Floor == "" && strings.Contains(v.Explanation, "fail-closed floor"):
			kinds["an invalid project file floors (NEW; 20.7.3 has no floor)"]++
		case v.Action == Ask && legacyYoloOn(c.Cwd):
			kinds["a legacy yoloMode true is not honoured (decision 0170)"]++
		default:
			t.Errorf("an undocumented difference: %+v: pi %s, permtui %s\n%s", c, res.State, v.Action, v.Explanation)

		}
	}
	if len(verdicts) > 0 {
		t.Fatalf("pi judged %d cases fewer than were sent\n%s", len(verdicts), stderr.Bytes())
	}
	t.Logf("%d cases (%d policies): %d agree; stricter than pi: %v", agree+sumValues(kinds), policies, agree, kinds)
}

// legacyYoloOn: the case's legacy project file sets yoloMode true.
func legacyYoloOn(cwd string) bool {
	data, err := os.ReadFile(LegacyProjectPath(cwd))
	return err == nil && bytes.Contains(data, []byte(`"yoloMode":true`))
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
