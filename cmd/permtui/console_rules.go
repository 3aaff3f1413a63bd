package main

import (
	"fmt"

	"github.com/permtui/permtui/internal/policyedit"
	"github.com/permtui/permtui/internal/ui"
)

// consoleRules is the console's R dialog backed by the same planning and
// writing as 'permtui rule add'; the console calls it inside tea.Cmds.
type consoleRules struct{ svc ruleService }

func (c consoleRules) plan(d ui.RuleDraft) (rulePlan, error) {
	scope, err := policyedit.ParseScope(d.Scope)
	if err != nil {
		return rulePlan{}, err
	}
	agent := ""
	if scope == policyedit.ScopeAgent {
		agent = d.Agent
	}
	r := policyedit.Rule{Surface: d.Surface, Pattern: d.Pattern, Action: d.Action}
	return c.svc.plan(scope, agent, r, d.Facts, d.Waiting)
}

func (c consoleRules) PreviewRule(d ui.RuleDraft) ui.RulePreview {
	p, err := c.plan(d)
	if err != nil {
		return ui.RulePreview{Refused: err.Error()}
	}
	pv := ui.RulePreview{File: p.ch.Real, Diff: p.ch.Diff(), Coverage: p.coverage(),
		Denied: p.denied(), Waiting: p.waiting, Warnings: p.warnings(), Digest: p.digest()}
	if p.risk != nil {
		pv.Broad, pv.Confirm = true, p.risk.Count
	}
	return pv
}

// WriteRule plans again from the files as they are now, under the lock, and
// writes only what the preview showed (its digest) and the count confirmed.
func (c consoleRules) WriteRule(d ui.RuleDraft, confirm int, digest string) (string, error) {
	scope, err := policyedit.ParseScope(d.Scope)
	if err != nil {
		return "", err
	}
	unlock, err := c.svc.lock(scope, d.Agent, d.Action)
	if err != nil {
		return "", err
	}
	defer unlock()
	p, err := c.plan(d)
	if err != nil {
		return "", err
	}
	if p.digest() != digest {
		return "", errPolicyChanged
	}
	if p.risk != nil && confirm != p.risk.Count {
		return "", fmt.Errorf("the rule needs the count %d; look at the preview again", p.risk.Count)
	}
	w, err := c.svc.write(p, "console")
	if err != nil {
		return "", err
	}
	status := "rule written to " + w.File
	if w.Backup != "" {
		status += " (backup in the state dir)"
	}
	return status + "; the policy reloads and answers the waiting asks it covers", nil
}
