package policyedit

import (
	"fmt"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// Risk is what makes a change need a second, explicit confirmation, and the
// count the person must name to give it (issue 12, safety): the sum of the
// counts its reasons name, so no kind of warning hides another's.
type Risk struct {
	Reasons []string
	Count   int
}

// Safety weighs a planned change against its coverage among the recorded
// asks: covered is how many it would have decided, personDenied how many of
// those a person denied. A pattern that matches everything, an allow of
// something a person denied, and any verdict the edit loosens that the
// person did not name (counted by old rule, new rule and surface) each need
// the second confirmation, and each adds its count (one per loosening
// group, the asks decided, the asks a person denied); nil when none applies.
func Safety(ch *Change, covered, personDenied int) *Risk {
	var r Risk
	groups := Group(ch.Loosens)
	for _, g := range groups {
		why := "it loosens " + g.String()
		if b := g.First.Before.Rule; b != nil && rank(b.Origin) > rank(ch.Target.Origin) {
			why += fmt.Sprintf(", a rule pi ranks above the %s scope", ch.Target.Origin)
		}
		r.Reasons = append(r.Reasons, why)
	}
	r.Count = len(groups)
	if resolve.EveryValue(ch.Rule.Pattern) {
		r.Reasons = append(r.Reasons, fmt.Sprintf("the pattern %q matches every value of %s: it would have decided %d recorded asks", ch.Rule.Pattern, ch.Rule.Surface, covered))
		r.Count += covered
	}
	// Only where nothing above warned: a loosening or "every value" already
	// names what such a pattern reaches, and counts it.
	if v := allowsSensitive(ch); v != "" && len(r.Reasons) == 0 {
		r.Reasons = append(r.Reasons, fmt.Sprintf("the pattern %q also allows %s: it is wider than it reads", ch.Rule.Pattern, v))
		r.Count++
	}
	if personDenied > 0 && ch.Rule.Action == resolve.Allow {
		r.Reasons = append(r.Reasons, fmt.Sprintf("it would allow %d recorded asks a person denied", personDenied))
		r.Count += personDenied
	}
	if len(r.Reasons) == 0 {
		return nil
	}
	return &r
}

// allowsSensitive names a sensitive value (resolve.SensitiveCovered) the
// edit's allow rule would decide, judged by the edited policy as pi would
// (its "~" and ".." joined), besides the facts asked about; "" for none or
// for a rule that is no allow. "?*" and "~/../../*" read narrow and are not.
func allowsSensitive(ch *Change) string {
	if ch.Rule.Action != resolve.Allow || ch.Edited == nil {
		return ""
	}
	return resolve.SensitiveCovered(ch.Edited.Options().Home, ch.Facts.Values, func(probe *wire.Request) bool {
		q := resolve.Query{Agent: ch.Target.Agent, Surface: probe.AccessIntent.Surface, Values: probe.AccessIntent.MatchValues}
		v := ch.Edited.Evaluate(q, nil)
		return v.Action == resolve.Allow && ch.IsNewRule(v.Rule)
	})
}
