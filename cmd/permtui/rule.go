package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/permtui/permtui/internal/policyedit"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/simulate"
	"github.com/permtui/permtui/internal/ui"
)

const ruleAddSynopsis = `rule add --surface S --pattern P --action allow|ask|deny [flags]

Writes one rule into pi's own policy: --scope global (default) edits the global
config.json, project the project's config.json, agent the permission: block of
the agent's file. It prints the change as a unified diff and what the rule would
have decided among the asks in the audit log, then writes it (after asking, on a
terminal; --yes to skip; --dry-run to only show). The rule is placed last in its
surface so it decides what it matches; where pi's ordering would still let
another rule decide the --value facts, nothing is written and permtui says why.`

// promptable reports whether the person can be asked on stdin: a terminal.
func promptable(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// ruleAddFlags are rule add's flags.
type ruleAddFlags struct {
	common
	rule                 policyedit.Rule
	action, scope, agent string
	values               listFlag
	dryRun, yes          bool
	confirmBroad         int
}

func (f *ruleAddFlags) register(fs flagSet) {
	f.registerPolicy(fs)
	fs.StringVar(&f.rule.Surface, "surface", "", "the rule's surface, e.g. bash, path_write, skill")
	fs.StringVar(&f.rule.Pattern, "pattern", "", "the rule's value pattern, e.g. 'npm install *'")
	fs.StringVar(&f.action, "action", "", "allow, ask or deny")
	fs.StringVar(&f.rule.Reason, "reason", "", "the reason a deny gives the agent")
	fs.StringVar(&f.scope, "scope", "global", "global, project or agent")
	fs.StringVar(&f.agent, "agent", "", "the agent: whose file --scope agent edits, and whose view the facts are judged in")
	fs.Var(&f.values, "value", "a match value the rule must decide (repeatable; default: the pattern's own text)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "show the diff and the coverage, write nothing")
	fs.BoolVar(&f.yes, "yes", false, "write without asking")
	fs.IntVar(&f.confirmBroad, "confirm-broad", -1, "with --yes: the sum of the counts a broad rule's warnings name, to write it anyway")
}

func runRule(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		fmt.Fprintf(stderr, "Usage: permtui %s\n", ruleAddSynopsis)
		return errUsage
	}
	var f ruleAddFlags
	fs := newFlagSet("rule add", ruleAddSynopsis, stdout, stderr)
	f.register(fs)
	if err := fs.parse(args[1:]); err != nil {
		return err
	}
	r := f.rule
	r.Action = resolve.Action(f.action)
	scope, err := policyedit.ParseScope(f.scope)
	if err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if err := f.resolveDefaults(); err != nil {
		return err
	}
	// A mistyped --agent-dir would write a new tree pi never reads.
	if err := f.checkPolicyAgentDir(); err != nil {
		return err
	}
	values := f.values
	if len(values) == 0 {
		values = listFlag{r.Pattern}
	}
	facts := resolve.Query{Agent: f.agent, Surface: r.Surface, Values: values}
	svc := ruleService{opts: f.loadOptions(), stateDir: f.stateDir}
	if !f.dryRun {
		// Held from the read to the audit record: a second writer waits.
		unlock, err := svc.lock(scope, f.agent, r.Action)
		if err != nil {
			return err
		}
		defer unlock()
	}
	p, err := svc.plan(scope, f.agent, r, facts, nil)
	if err != nil {
		return err
	}
	printRulePlan(stdout, r, p)
	if f.dryRun {
		fmt.Fprintln(stdout, "dry run: nothing written")
		return nil
	}
	if err := confirm(stdin, stdout, f.yes, p.risk, f.confirmBroad, p.ch.Target.File); err != nil {
		return err
	}
	// Another policy file may have changed while the person decided: write
	// only what they saw.
	again, err := svc.plan(scope, f.agent, r, facts, nil)
	if err != nil {
		return err
	}
	if again.digest() != p.digest() {
		return errPolicyChanged
	}
	w, err := svc.write(again, "rule add")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "written: %s\n", w.File)
	if w.Backup != "" {
		fmt.Fprintf(stdout, "backup:  %s\n", w.Backup)
	}
	return nil
}

// printRulePlan shows what rule add would write and what it would decide:
// the file, the diff, the coverage, the asks a person denied, the warnings.
func printRulePlan(stdout io.Writer, r policyedit.Rule, p rulePlan) {
	t := p.ch.Target
	// The diff's context lines are the file as it is: a project config comes
	// with the repository, so its comments may hold terminal controls.
	file := ui.Sanitize(p.ch.Real)
	if p.ch.Real != t.File {
		file += ", through the link " + ui.Sanitize(t.File)
	}
	fmt.Fprintf(stdout, "rule   %s\nfile   %s (%s scope)\n\n%s\n", r, file, t.Origin, strings.Join(ui.SanitizeLines(p.ch.Diff()), "\n"))
	fmt.Fprintf(stdout, "coverage: %s\n", p.coverage())
	for _, line := range p.denied() {
		fmt.Fprintf(stdout, "  denied by a person: %s\n", line)
	}
	for _, reason := range p.warnings() {
		fmt.Fprintf(stdout, "warning: %s\n", reason)
	}
}

// ruleLockWait bounds how long a rule edit waits for another writer of the
// same policy file (one holding a terminal prompt, say) before refusing.
const ruleLockWait = 10 * time.Second

// ruleService plans and writes rules, for 'rule add' and the console's R.
type ruleService struct {
	opts     resolve.LoadOptions
	stateDir string
}

// lock takes the write lock of the file a rule at scope goes to.
func (s ruleService) lock(scope policyedit.Scope, agent string, action resolve.Action) (func(), error) {
	target, err := policyedit.Locate(s.opts, scope, agent, action)
	if err != nil {
		return nil, err
	}
	return policyedit.Lock(target, ruleLockWait)
}

// rulePlan is a checked change with what it would have decided.
type rulePlan struct {
	ch      *policyedit.Change
	cov     simulate.Coverage
	risk    *policyedit.Risk
	waiting []int // of the waiting asks given, the indices of those it would decide
}

// plan locates the file, plans the edit (refusing what pi's ordering would
// not let the rule decide), and replays the audit log and the waiting asks
// against the edited policy.
func (s ruleService) plan(scope policyedit.Scope, agent string, r policyedit.Rule, facts resolve.Query, waiting []resolve.Query) (rulePlan, error) {
	target, err := policyedit.Locate(s.opts, scope, agent, r.Action)
	if err != nil {
		return rulePlan{}, err
	}
	ch, err := policyedit.Plan(s.opts, target, r, facts)
	if err != nil {
		return rulePlan{}, fmt.Errorf("nothing written: %w", err)
	}
	log, err := simulate.ReadLog(serve.AuditPath(s.stateDir), time.Time{})
	if err != nil {
		return rulePlan{}, err
	}
	cand := ch.Edited
	isNew := ch.IsNewRule
	p := rulePlan{ch: ch, cov: simulate.Replay(log, ch.Current, cand).CoverageOf(isNew)}
	for i, q := range waiting {
		if isNew(cand.Evaluate(q, nil).Rule) {
			p.waiting = append(p.waiting, i)
		}
	}
	p.risk = policyedit.Safety(ch, len(p.cov.Decided), len(p.cov.Denied))
	return p, nil
}

// coverage says what the rule decides of what was asked before and, for an
// allow written to the project's config while serve holds their allows for
// a person (decision 0206), that serve still asks until it trusts them. An
// agent's allow is not written to the project's then (decision 0240).
func (p rulePlan) coverage() string {
	sum := p.cov.Summary()
	t, opts := p.ch.Target, p.ch.Current.Options()
	if p.ch.Rule.Action == resolve.Allow && opts.HoldProjectAllows && t.Origin == resolve.OriginProject {
		sum += "; serve holds what the project's files allow for a person until it runs with --trust-project"
	}
	return sum
}

func (p rulePlan) denied() []string {
	var out []string
	for _, o := range p.cov.Denied {
		out = append(out, describeAsk(o))
	}
	return out
}

// errPolicyChanged: the plan made again before writing is not the one shown.
var errPolicyChanged = fmt.Errorf("%w: the policy changed while you were deciding; look at the preview again", errNotConfirmed)

// digest sums up what a person confirms: the diff and every warning (the
// loosenings named, with their counts).
func (p rulePlan) digest() string {
	h := sha256.New()
	h.Write([]byte(p.ch.Diff()))
	for _, w := range p.warnings() {
		h.Write([]byte{0})
		h.Write([]byte(w))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (p rulePlan) warnings() []string {
	if p.risk == nil {
		return nil
	}
	return p.risk.Reasons
}

// write applies the plan and records who wrote which rule to which file.
// The log is opened first: one that refuses the record refuses the rule.
func (s ruleService) write(p rulePlan, via string) (policyedit.Written, error) {
	log, err := serve.OpenRuleLog(s.stateDir)
	if err != nil {
		return policyedit.Written{}, fmt.Errorf("nothing written: %w", err)
	}
	w, err := policyedit.Apply(p.ch, s.opts, s.stateDir, time.Now())
	if err != nil {
		log.Close()
		return w, err
	}
	r, t := p.ch.Rule, p.ch.Target
	err = log.Append(serve.RuleRecord{
		Surface: r.Surface, Pattern: r.Pattern, Action: string(r.Action), Reason: r.Reason,
		Scope: string(t.Scope), Agent: t.Agent, File: w.File, Backup: w.Backup,
		By: whoami(), Via: via, WrittenAt: time.Now().UnixMilli(),
	})
	if err != nil {
		// The rule is in force: saying only "error" would hide that.
		return w, fmt.Errorf("the rule WAS written to %s (backup %q), but its audit record could not be appended: %w", w.File, w.Backup, err)
	}
	return w, nil
}

// errNotConfirmed: the person said no, or could not be asked.
var errNotConfirmed = errors.New("nothing written")

// confirm asks before writing: once for every rule, and a second time, by
// typing the sum of the counts its warnings name, for a risky one. --yes answers the
// first; the second needs --confirm-broad with that count.
func confirm(stdin io.Reader, stdout io.Writer, yes bool, risk *policyedit.Risk, broad int, file string) error {
	if yes {
		if risk != nil && broad != risk.Count {
			return fmt.Errorf("%w: this rule needs --confirm-broad %d (%s) besides --yes", errNotConfirmed, risk.Count, countMeaning(risk.Count))
		}
		return nil
	}
	if !promptable(stdin) {
		return fmt.Errorf("%w: no terminal to confirm on; pass --yes, or --dry-run to only look", errNotConfirmed)
	}
	in := bufio.NewReader(stdin)
	fmt.Fprintf(stdout, "write this rule to %s? [y/N] ", file)
	if answer, _ := in.ReadString('\n'); strings.TrimSpace(strings.ToLower(answer)) != "y" {
		return errNotConfirmed
	}
	if risk != nil {
		fmt.Fprintf(stdout, "this rule is broad: type %d (%s) to write it anyway: ", risk.Count, countMeaning(risk.Count))
		if answer, _ := in.ReadString('\n'); strings.TrimSpace(answer) != strconv.Itoa(risk.Count) {
			return errNotConfirmed
		}
	}
	return nil
}

// countMeaning says what the count of a broad rule is. A count of 0 (a "*"
// rule with nothing recorded that it would have decided) still gates the
// write and says what typing it confirms (decision 0295).
func countMeaning(n int) string {
	if n == 0 {
		return "it would have decided no recorded ask"
	}
	return "the sum of the counts its warnings name"
}

// describeAsk is one recorded ask on one line, request strings quoted so
// no control sequence reaches the terminal.
func describeAsk(o simulate.Outcome) string {
	f := o.Record.Facts
	agent := f.Principal
	if agent == "" {
		agent = "(no agent)"
	}
	return fmt.Sprintf("%s %s %q", strconv.Quote(agent), strconv.Quote(f.Surface), f.MatchValues)
}

// whoami names the OS user who confirmed a rule, for the audit log.
func whoami() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}
