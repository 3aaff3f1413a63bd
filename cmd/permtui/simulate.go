package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/policyedit"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/simulate"
	"github.com/permtui/permtui/internal/termsafe"
)

const simulateSynopsis = `simulate (--rule SURFACE PATTERN ACTION ... [--scope S] [--agent NAME] | --config FILE) [flags]

Replays the asks recorded in the audit log (the facts as each child sent them)
against the policy as it is and against a candidate: the current policy with the
--rule edits (placed as 'rule add' places them), or with FILE as the global
config. Prints how many asks each answers allow / deny / ask, every ask whose
answer changes, by agent, with the rule that decides it, and every verdict of the
policy the candidate loosens that its --rule edits do not name themselves (the
authority diff of 'rule add'). Exits 0 when nothing is loosened, 1 when the
policy is loosened or an ask a person denied would now be allowed (a guard for
policy changes in CI), 2 on a usage or read error or a --config candidate pi
rejects (its problems are printed; with --json as "candidateProblems").`

// maxCandidateConfig caps a --config file (pi's policy files are small).
const maxCandidateConfig = 1 << 20

// runSimulate exits with status 1 when the candidate loosens the policy or an
// ask a person denied would now be allowed, 2 on any error.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	err := simulateRun(args, stdout, stderr)
	var status exitStatus
	if err == nil || errors.As(err, &status) || errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return err
	}
	// An error is not a finding: it must not share the finding's status.
	fmt.Fprintln(stderr, "permtui:", err)
	return exitStatus(2)
}

func simulateRun(args []string, stdout, stderr io.Writer) error {
	var c common
	var scopeFlag, agent, config, audit string
	var since time.Duration
	var asJSON bool
	fs := newFlagSet("simulate", simulateSynopsis, stdout, stderr)
	c.registerPolicy(fs)
	fs.StringVar(&scopeFlag, "scope", "global", "where the --rule edits go: global, project or agent")
	fs.StringVar(&agent, "agent", "", "the agent whose file --scope agent edits")
	fs.StringVar(&config, "config", "", "a whole candidate global config.json")
	fs.StringVar(&audit, "audit", "", "the audit log (default <state-dir>/audit.jsonl)")
	fs.DurationVar(&since, "since", 0, "replay only asks decided within this long, e.g. 24h")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	rules, rest, err := splitRuleTriples(args)
	if err != nil {
		return fs.mistake(err)
	}
	if err := fs.parse(rest); err != nil {
		return err
	}
	if (len(rules) == 0) == (config == "") {
		return fs.mistake(errors.New("give --rule SURFACE PATTERN ACTION (repeatable) or --config FILE"))
	}
	if err := c.resolveDefaults(); err != nil {
		return err
	}
	// A mistyped --agent-dir would judge by no policy at all.
	if err := c.checkPolicyAgentDir(); err != nil {
		return err
	}
	opts := c.loadOptions()
	base, cand, file, err := candidate(opts, rules, scopeFlag, agent, config)
	if err != nil {
		return err
	}
	if audit == "" {
		audit = serve.AuditPath(c.stateDir)
	}
	var from time.Time
	if since > 0 {
		from = time.Now().Add(-since)
	}
	log, err := simulate.ReadLog(audit, from)
	if err != nil {
		return err
	}
	cur, next := resolve.Load(base), resolve.Load(cand)
	if config != "" {
		if err := refuseRejected(stdout, stderr, next, file, config, asJSON); err != nil {
			return err
		}
	}
	rep := simulate.Replay(log, cur, next)
	loosens, err := policyedit.Loosenings(cur, next)
	if err != nil {
		return err
	}
	loosened := policyedit.Group(policyedit.Unnamed(loosens, file, rules...))
	if asJSON {
		err = printReportJSON(stdout, rep, loosened)
	} else {
		printReport(stdout, rep, loosened)
	}
	if err == nil && (len(rep.DeniedNowAllowed()) > 0 || len(loosened) > 0) {
		err = exitStatus(1)
	}
	return err
}

// splitRuleTriples takes every --rule SURFACE PATTERN ACTION out of args.
func splitRuleTriples(args []string) ([]policyedit.Rule, []string, error) {
	var rules []policyedit.Rule
	var rest []string
	for i := 0; i < len(args); i++ {
		if args[i] != "--rule" && args[i] != "-rule" {
			rest = append(rest, args[i])
			continue
		}
		if len(args)-i < 4 {
			return nil, nil, fmt.Errorf("--rule takes three arguments: SURFACE PATTERN ACTION")
		}
		rules = append(rules, policyedit.Rule{Surface: args[i+1], Pattern: args[i+2], Action: resolve.Action(args[i+3])})
		i += 3
	}
	return rules, rest, nil
}

// candidate is opts with the candidate files in its overlay (cand), opts
// with the text of the file the --rule edits go to as it was read for them
// (base: both judge the same bytes, read once), and that file.
func candidate(opts resolve.LoadOptions, rules []policyedit.Rule, scopeFlag, agent, config string) (base, cand resolve.LoadOptions, file string, err error) {
	base, cand = opts, opts
	if config != "" {
		data, err := safefs.ReadRegularFileFollow(config, maxCandidateConfig)
		if err != nil {
			return base, cand, "", err
		}
		file = resolve.GlobalConfigPath(opts.AgentDir)
		cand.Overlay = map[string][]byte{file: data}
		return base, cand, file, nil
	}
	scope, err := policyedit.ParseScope(scopeFlag)
	if err != nil {
		return base, cand, "", err
	}
	// The file rule add would write: an allow among the edits decides it.
	action := resolve.Deny
	if slices.ContainsFunc(rules, func(r policyedit.Rule) bool { return r.Action == resolve.Allow }) {
		action = resolve.Allow
	}
	target, err := policyedit.Locate(opts, scope, agent, action)
	if err != nil {
		return base, cand, "", err
	}
	text, existed, err := policyedit.Read(opts, target.File)
	if err != nil {
		return base, cand, "", err
	}
	if existed {
		base.Overlay = map[string][]byte{target.File: text}
	}
	for _, r := range rules {
		if text, err = policyedit.Edit(target, r, text, existed); err != nil {
			return base, cand, "", fmt.Errorf("--rule %s: %w", r, err)
		}
		existed = true
	}
	cand.Overlay = map[string][]byte{target.File: text}
	return base, cand, target.File, nil
}

func printReport(w io.Writer, rep simulate.Report, loosened []policyedit.LooseningGroup) {
	defer printLoosened(w, loosened)
	fmt.Fprintf(w, "replayed %d recorded asks", rep.Replayed)
	if rep.NoFacts > 0 {
		fmt.Fprintf(w, " (%d more carry no facts and are not replayed)", rep.NoFacts)
	}
	if rep.Bad > 0 {
		fmt.Fprintf(w, " (%d lines of the log did not parse)", rep.Bad)
	}
	fmt.Fprintf(w, "\n\n%-10s %6s %6s %6s\n", "", "allow", "deny", "ask")
	for _, row := range []struct {
		name string
		c    simulate.Counts
	}{{"current", rep.Current}, {"candidate", rep.Candidate}} {
		fmt.Fprintf(w, "%-10s %6d %6d %6d\n", row.name, row.c.Allow, row.c.Deny, row.c.Ask)
	}
	changed := byAgent(rep.Changed())
	if len(changed) == 0 {
		fmt.Fprintln(w, "\nno answer changes")
		return
	}
	fmt.Fprintf(w, "\n%d answers change:\n", len(changed))
	for i, o := range changed {
		f := o.Record.Facts
		if i == 0 || f.Principal != changed[i-1].Record.Facts.Principal {
			fmt.Fprintf(w, "  agent %s\n", strconv.Quote(f.Principal))
		}
		note := ""
		if p := personAnswer(o); p != "" {
			note = "  (a person " + p + " it)"
		}
		fmt.Fprintf(w, "    %s → %s  %s %q%s\n      by %s\n", o.Before.Action, o.After.Action, strconv.Quote(f.Surface), f.MatchValues, note, policyedit.DescribeVerdict(o.After))
	}
	if denied := rep.DeniedNowAllowed(); len(denied) > 0 {
		fmt.Fprintf(w, "\n%d asks a person denied would now be allowed\n", len(denied))
	}
}

// printLoosened lists what the candidate loosens that its rules do not name.
func printLoosened(w io.Writer, loosened []policyedit.LooseningGroup) {
	if len(loosened) == 0 {
		fmt.Fprintln(w, "\nthe policy loosens nothing the --rule edits do not name")
		return
	}
	fmt.Fprintf(w, "\nthe policy loosens %d verdicts the --rule edits do not name:\n", len(loosened))
	for _, g := range loosened {
		fmt.Fprintf(w, "  %s\n", g)
	}
}

// personAnswer is what a person answered the ask: approved, denied or "".
func personAnswer(o simulate.Outcome) string {
	switch {
	case o.PersonDenied:
		return "denied"
	case o.PersonApproved:
		return "approved"
	}
	return ""
}

// byAgent sorts outs by agent in place, keeping the log's order within one.
func byAgent(outs []simulate.Outcome) []simulate.Outcome {
	slices.SortStableFunc(outs, func(a, b simulate.Outcome) int {
		return strings.Compare(a.Record.Facts.Principal, b.Record.Facts.Principal)
	})
	return outs
}

// reportJSON is the --json form of a report.
type reportJSON struct {
	Replayed         int              `json:"replayed"`
	NoFacts          int              `json:"noFacts"`
	Bad              int              `json:"badLines"`
	Current          simulate.Counts  `json:"current"`
	Candidate        simulate.Counts  `json:"candidate"`
	Changed          []changedAskJSON `json:"changed"`
	DeniedNowAllowed int              `json:"deniedNowAllowed"`
	Loosened         []loosenedJSON   `json:"loosened"`
}

// loosenedJSON is one group of the authority diff: a verdict the candidate
// loosens, in the views listed, first seen at value.
type loosenedJSON struct {
	Agents    []string       `json:"agents"` // "" = no agent
	Surface   string         `json:"surface"`
	Value     string         `json:"value"`
	Before    resolve.Action `json:"before"`
	After     resolve.Action `json:"after"`
	Was       *ruleJSON      `json:"was"`
	Now       *ruleJSON      `json:"now"`
	Witnesses int            `json:"witnesses"`
}

type changedAskJSON struct {
	RequestID string         `json:"requestId"`
	Agent     string         `json:"agent"`
	Surface   string         `json:"surface"`
	Values    []string       `json:"values"`
	Before    resolve.Action `json:"before"`
	After     resolve.Action `json:"after"`
	Person    string         `json:"person,omitempty"` // approved | denied
	Rule      *ruleJSON      `json:"rule"`             // the candidate's deciding rule; null for no rule
}

type ruleJSON struct {
	Surface string         `json:"surface"`
	Pattern string         `json:"pattern"`
	Action  resolve.Action `json:"action"`
	Origin  string         `json:"origin"`
	File    string         `json:"file,omitempty"`
	Yolo    string         `json:"yolo,omitempty"` // yoloMode made the verdict allow past this rule: what set it
}

// toRuleJSON is the rule that decided v, as written; nil for no rule.
func toRuleJSON(v resolve.Verdict) *ruleJSON {
	r := v.Rule
	if r == nil {
		return nil
	}
	return &ruleJSON{Surface: r.Surface, Pattern: r.Pattern, Action: r.Action, Origin: r.Origin, File: r.File, Yolo: v.Yolo}
}

func printReportJSON(w io.Writer, rep simulate.Report, loosened []policyedit.LooseningGroup) error {
	out := reportJSON{Replayed: rep.Replayed, NoFacts: rep.NoFacts, Bad: rep.Bad, Current: rep.Current, Candidate: rep.Candidate,
		Changed: []changedAskJSON{}, DeniedNowAllowed: len(rep.DeniedNowAllowed()), Loosened: []loosenedJSON{}}
	for _, g := range loosened {
		l := g.First
		out.Loosened = append(out.Loosened, loosenedJSON{Agents: g.Views, Surface: l.Surface, Value: l.Value,
			Before: l.Before.Action, After: l.After.Action, Was: toRuleJSON(l.Before), Now: toRuleJSON(l.After), Witnesses: g.Count})
	}
	for _, o := range byAgent(rep.Changed()) {
		f := o.Record.Facts
		out.Changed = append(out.Changed, changedAskJSON{RequestID: o.Record.RequestID, Agent: f.Principal, Surface: f.Surface,
			Values: f.MatchValues, Before: o.Before.Action, After: o.After.Action, Person: personAnswer(o), Rule: toRuleJSON(o.After)})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", termsafe.EscapeJSON(data))
	return err
}

// candidateProblemJSON is one reason pi would reject a --config candidate.
type candidateProblemJSON struct {
	File    string `json:"file"`
	Message string `json:"message"`
}

// refuseRejected exits 2 when pi would reject the --config candidate, read
// as file: judged anyway it is no policy, and its loosenings would be
// measured against rules that do not exist. Its problems go to stderr, and
// with --json to stdout as {"candidateProblems": […]}.
func refuseRejected(stdout, stderr io.Writer, next *resolve.Policy, file, config string, asJSON bool) error {
	var probs []candidateProblemJSON
	for _, pr := range next.Problems() {
		if pr.File == file {
			probs = append(probs, candidateProblemJSON{File: config, Message: pr.Message})
			fmt.Fprintf(stderr, "permtui: pi rejects the candidate %s, so it is no policy to simulate: %s\n", config, pr.Message)
		}
	}
	if len(probs) == 0 {
		return nil
	}
	if asJSON {
		if err := writeJSONLine(stdout, map[string]any{"candidateProblems": probs}); err != nil {
			return err
		}
	}
	return exitStatus(2)
}
