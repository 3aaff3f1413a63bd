package policyedit

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
)

// ruleAddVector is a conformance vector's layout (the policy files of
// ruleset.jsonl) plus a rule to add, the originating facts it must decide
// and a neighbour whose answer must not change.
type ruleAddVector struct {
	testkit.Ruleset
	Why string `json:"why"`
	Add struct {
		Scope   Scope          `json:"scope"`
		Agent   string         `json:"agent"`
		Surface string         `json:"surface"`
		Pattern string         `json:"pattern"`
		Action  resolve.Action `json:"action"`
		Reason  string         `json:"reason"`
	} `json:"add"`
	Facts     query `json:"facts"`
	Neighbour struct {
		query
		Expect  resolve.Action `json:"expect"`
		Pattern *string        `json:"pattern"`
	} `json:"neighbour"`
	// Loosens are verdicts the rule loosens that nobody named: the change
	// must name each (same view, surface, old and new deciding rule), and
	// Confirm is the count its counted confirmation asks for.
	Loosens []struct {
		query
		Before resolve.Action `json:"before"`
		After  resolve.Action `json:"after"`
	} `json:"loosens"`
	Confirm int `json:"confirm"`
	// Refuse is what the refusal says; nothing is written.
	Refuse string `json:"refuse"`
}

type query struct {
	Agent   string   `json:"agent"`
	Surface string   `json:"surface"`
	Values  []string `json:"values"`
}

// TestRuleAddVectors writes each rule with Plan and Apply, then asks the
// resolver that serves asks: the originating facts get the rule's action
// from the rule, the neighbour keeps its answer. The written file is read
// by the same loader the conformance vectors hold to pi's.
func TestRuleAddVectors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "ruleadd.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var v ruleAddVector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		t.Run(v.ID, func(t *testing.T) {
			e := newEnv(t, nil)
			v.WriteFiles(t, e.opts.AgentDir, e.opts.ProjectDir)
			r := Rule{Surface: v.Add.Surface, Pattern: v.Add.Pattern, Action: v.Add.Action, Reason: v.Add.Reason}
			facts := resolve.Query{Agent: v.Facts.Agent, Surface: v.Facts.Surface, Values: v.Facts.Values}
			if facts.Surface == "" {
				facts.Surface = r.Surface
			}
			neighbour := resolve.Query{Agent: v.Neighbour.Agent, Surface: v.Neighbour.Surface, Values: v.Neighbour.Values}
			before := resolve.Load(e.opts).Evaluate(neighbour, nil)
			target, err := Locate(e.opts, v.Add.Scope, v.Add.Agent, r.Action)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := Plan(e.opts, target, r, facts)
			if v.Refuse != "" {
				if err == nil || !strings.Contains(err.Error(), v.Refuse) {
					t.Fatalf("%s: Plan err = %v, want a refusal saying %q", v.Why, err, v.Refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cand := ch.Edited
			for _, l := range v.Loosens {
				q := resolve.Query{Agent: l.Agent, Surface: l.Surface, Values: l.Values}
				b, a := resolve.Load(e.opts).Evaluate(q, nil), cand.Evaluate(q, nil)
				if b.Action != l.Before || a.Action != l.After {
					t.Errorf("%s: %+v goes %s → %s, want %s → %s", v.Why, q, b.Action, a.Action, l.Before, l.After)
				}
				if !slices.ContainsFunc(ch.Loosens, func(n Loosening) bool {
					return n.Agent == q.Agent && n.Surface == q.Surface && ruleKey(n.Before.Rule) == ruleKey(b.Rule) && ruleKey(n.After.Rule) == ruleKey(a.Rule)
				}) {
					t.Errorf("%s: %+v (%s → %s) is not named; named: %v", v.Why, q, b.Action, a.Action, Group(ch.Loosens))
				}
			}
			if v.Confirm > 0 {
				if risk := Safety(ch, 0, 0); risk == nil || risk.Count != v.Confirm {
					t.Errorf("%s: Safety = %+v, want a counted confirmation of %d", v.Why, risk, v.Confirm)
				}
			}
			if _, err := Apply(ch, e.opts, e.state, time.Now()); err != nil {
				t.Fatal(err)
			}
			p := resolve.Load(e.opts)
			if pr := p.Problems(); len(pr) > 0 {
				t.Fatalf("the written policy has problems: %+v", pr)
			}
			got := p.Evaluate(facts, nil)
			if got.Action != r.Action || got.Rule == nil || got.Rule.Pattern != r.Pattern || got.Rule.File != target.File {
				t.Errorf("%s: originating facts → %s by %+v, want %s by the new rule", v.Why, got.Action, got.Rule, r.Action)
			}
			if r.Reason != "" && got.Reason != r.Reason {
				t.Errorf("reason %q, want %q", got.Reason, r.Reason)
			}
			after := p.Evaluate(neighbour, nil)
			if after.Action != v.Neighbour.Expect || after.Action != before.Action {
				t.Errorf("%s: neighbour → %s (was %s), want %s", v.Why, after.Action, before.Action, v.Neighbour.Expect)
			}
			if !samePattern(after.Pattern, v.Neighbour.Pattern) {
				t.Errorf("neighbour decided by pattern %v, want %v", deref(after.Pattern), deref(v.Neighbour.Pattern))
			}
		})
	}
}

func samePattern(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
