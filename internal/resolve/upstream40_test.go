package resolve

import (
	"testing"

	"github.com/permtui/permtui/internal/wire"
)

// wire-protocol §13, 40.1.4: suggested session-grant patterns such as
// "nohup mytool *" are stored verbatim and matched with the ordinary
// wildcard rules.
func TestSuggestedWrapperGrantPatterns(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	p := Load(f.opts)
	g := []wire.Grant{{Surface: "bash", Pattern: "nohup mytool *"}, {Surface: "bash", Pattern: "sudo -u root nohup mytool *"}}
	for name, c := range map[string]evalCase{
		"covers the tool with arguments":   {surface: "bash", values: []string{"nohup mytool x"}, want: Allow, origin: OriginSession, pattern: "nohup mytool *"},
		"covers the bare tool":             {surface: "bash", values: []string{"nohup mytool"}, want: Allow, origin: OriginSession, pattern: "nohup mytool *"},
		"not another tool":                 {surface: "bash", values: []string{"nohup othertool x"}, want: Ask, origin: OriginGlobal, pattern: "*"},
		"not a longer tool name":           {surface: "bash", values: []string{"nohup mytoolx"}, want: Ask, origin: OriginGlobal, pattern: "*"},
		"the wrapper with options":         {surface: "bash", values: []string{"sudo -u root nohup mytool -v"}, want: Allow, origin: OriginSession, pattern: "sudo -u root nohup mytool *"},
		"not the wrapper with other users": {surface: "bash", values: []string{"sudo -u bob nohup mytool -v"}, want: Ask, origin: OriginGlobal, pattern: "*"},
	} {
		c.grants = g
		c.check(t, p, name)
	}
}

// §13, 40.0.2: a partly granted chain arrives with only its remaining units,
// floored. The grant covers its own unit; the floored rest still asks even
// where a rule allows it, and the most restrictive unit decides.
func TestFlooredUnitUnderASessionGrant(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":{"*":"ask","sudo *":"allow"}}}`)
	p := Load(f.opts)
	grants := []wire.Grant{{Surface: "bash", Pattern: "sudo rm y"}}
	floor := "<indirection-bash-wrapper>"
	for name, tc := range map[string]struct {
		units   []wire.AskingUnit
		want    Action
		pattern string
		unit    string
	}{
		"the remaining floored unit asks": {
			units: []wire.AskingUnit{{Command: "sudo rm z", Floor: &floor}}, want: Ask, pattern: floor, unit: "sudo rm z"},
		"a granted unit in the chain does not lift the other": {
			units: []wire.AskingUnit{{Command: "sudo rm y"}, {Command: "sudo rm z", Floor: &floor}}, want: Ask, pattern: floor, unit: "sudo rm z"},
		"the granted unit alone is allowed, floor or not": {
			units: []wire.AskingUnit{{Command: "sudo rm y", Floor: &floor}}, want: Allow, pattern: "sudo rm y", unit: "sudo rm y"},
	} {
		q := Query{Surface: "bash", Values: []string{"sudo rm y && sudo rm z"}, AskingUnits: tc.units}
		v := p.Evaluate(q, grants)
		if v.Action != tc.want || deref(v.Pattern) != tc.pattern || v.Unit != tc.unit {
			t.Errorf("%s: %s pattern %q unit %q, want %s pattern %q unit %q\n%s", name, v.Action, deref(v.Pattern), v.Unit, tc.want, tc.pattern, tc.unit, v.Explanation)
		}
	}
}
