// Package resolve is permtui's judgment: the root's pi-permission-system
// policy, scoped to the requesting agent, applied to the facts a child sent.
// Evaluation is pure; loading files and persisting grants live in their own
// files and never run during evaluation.
package resolve

import "github.com/permtui/permtui/internal/wire"

// Action is a rule's state. Restrictiveness: Deny > Ask > Allow.
type Action string

const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// IsState reports whether s is one of pi's three states (an Action).
func IsState(s string) bool { return s == string(Allow) || s == string(Ask) || s == string(Deny) }

// Verdict is the outcome of judging one request, with everything needed to
// answer it on the wire and to explain it to a person.
type Verdict struct {
	Action Action
	// Surface is the forwarded accessIntent.surface ("" when the request had no facts).
	Surface string
	// Pattern is the matchedPattern reported on the wire: set only when a
	// config or session rule (or a floor sentinel) decided; nil for the
	// default and baseline rules.
	Pattern *string
	// Origin of the winning rule: global, project, agent, project-agent,
	// builtin, baseline, session, yolo, fail-closed. "" when no rule ran.
	Origin string
	// Reason is the deny reason carried to the child (Deny only; may be "").
	Reason string
	// Explanation says why, in one or more plain sentences.
	Explanation string
	// Rule describes the winning rule; nil when the request had no facts.
	Rule *RuleRef
	// Floor is the request's floor sentinel when it touched an allow: it
	// forced an ask, or (under yoloMode, Action allow) became the pattern.
	Floor string
	// Yolo names what set yoloMode ("yoloMode true in FILE") when it
	// decided: it turned Rule's ask into allow, or kept an allow past Floor.
	Yolo string
	// Unit is the asking unit that decided, for bash chains.
	Unit string
	// Member is the directional member whose result a bare-family query
	// (path, external_directory) reports, e.g. "path_write"; "" otherwise.
	Member string
	// Value is the value the winning rule matched first ("*" for surfaces
	// judged on the literal value *).
	Value string
	// AgentWithoutFile: the request names an agent that has no agent file,
	// so only the shared scopes judged it (decision 0205).
	AgentWithoutFile bool
	// AgentResembles, for an agent without a file, names an agent file whose
	// name differs from it only by case or blanks at the ends: rules the
	// request escapes by its spelling.
	AgentResembles string
	// OutsideProject is the project dir the policy was loaded for when the
	// request's requesterCwd lies outside it: that cwd's own project was
	// not read (decision 0234).
	OutsideProject string
	// OwnProject, with OutsideProject, is the dir under that project, at or
	// above requesterCwd, that holds a .pi: the cwd's own project (decision 0257).
	OwnProject string
	// Hint, for a request without facts only, is what the policy would say
	// about its legacy surface and value: unverified text, so it is shown to
	// the person and never decides (decision 0029).
	Hint *Verdict
}

// RuleRef locates a rule for explanations. It describes the rule as written;
// shared by every verdict of a policy, so callers must not modify it.
type RuleRef struct {
	Surface string // the rule's surface pattern
	Pattern string // the rule's value pattern
	Action  Action // as written (before the fail-closed floor and yolo)
	Origin  string // as written (global, project, agent, project-agent, builtin, baseline, session)
	File    string // the file that defined it; "" for built-in rules and grants
	Index   int    // position in the composed ruleset (0 = lowest priority)
	// FailClosed: the fail-closed floor turned this allow into ask.
	FailClosed bool
}

// Query is a set of child-fixed facts to judge for one agent.
type Query struct {
	Agent       string // principal.agentName; "" means no agent scope
	Surface     string
	Values      []string
	Floor       *string
	AskingUnits []wire.AskingUnit
}
