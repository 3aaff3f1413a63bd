package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/jsonparse"
	"github.com/permtui/permtui/internal/judgment"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

const resolveSynopsis = `resolve [flags] (--request FILE | --agent A --surface S --value V... | --batch)

Judges facts against the root's policy as the serving node would and prints the
verdict as JSON: state, pattern, origin, reason, surface, explanation.
--batch reads JSON lines {"agent","surface","values","floor"?,"askingUnits"?}
from stdin and prints one verdict line per input line, in order.

Exit status: 0 when judged (with --exit-code: 0 allow, 3 ask, 4 deny; for
--batch the strictest verdict of all lines; 3 for an allow while a policy file
is unusable, because serve then asks a person), 1 on an error, 2 on a usage
mistake.`

// Exit statuses of 'resolve --exit-code', apart from errors (1) and usage
// mistakes (2), in the manner of 'git diff --exit-code'.
const (
	exitAllow = 0
	exitAsk   = 3
	exitDeny  = 4
)

// exitStatus is an error that only sets the process exit status; run prints
// nothing for it.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// servedAs is what serve does with a verdict: its --exit-code status, and
// the words for the stderr note.
func servedAs(a resolve.Action) (status int, words string) {
	switch a {
	case resolve.Allow:
		return exitAllow, "allow"
	case resolve.Deny:
		return exitDeny, "deny"
	}
	return exitAsk, "ask a person"
}

// verdictJSON is the printed form of a verdict. Strings from policy files
// and requests are printed as JSON.stringify would, a lone surrogate
// included (decision 0175).
type verdictJSON struct {
	State       resolve.Action `json:"state"`
	Pattern     *wire.JSString `json:"pattern"`
	Origin      *string        `json:"origin"`
	Reason      *wire.JSString `json:"reason"`
	Surface     wire.JSString  `json:"surface"`
	Explanation string         `json:"explanation"`
}

// batchError stands in the output for a batch line that could not be judged.
type batchError struct {
	Error string `json:"error"`
}

// resolveFlags are resolve's flags: one of three forms (a request file,
// facts, or a batch on stdin).
type resolveFlags struct {
	common
	request, agent, surface string
	values                  listFlag
	batch, exitCode         bool
}

func (f *resolveFlags) register(fs flagSet) {
	f.common.register(fs)
	fs.StringVar(&f.request, "request", "", "judge this request file")
	fs.StringVar(&f.agent, "agent", "", "principal agent name (\"\" = no agent scope)")
	fs.StringVar(&f.surface, "surface", "", "accessIntent surface, e.g. bash, path_write, external_directory_read")
	fs.Var(&f.values, "value", "a match value (repeatable)")
	fs.BoolVar(&f.batch, "batch", false, "read JSON lines from stdin, print one verdict per line")
	fs.BoolVar(&f.exitCode, "exit-code", false, "exit 0 on allow, 3 on ask, 4 on deny")
}

// check refuses anything but exactly one form, in the user's terms.
func (f *resolveFlags) check(fs flagSet) error {
	surfaceSet := isFlagSet(fs, "surface")
	forms := 0
	for _, set := range []bool{f.request != "", surfaceSet || len(f.values) > 0, f.batch} {
		if set {
			forms++
		}
	}
	switch {
	case forms != 1:
		return errors.New("give exactly one of --request FILE, --surface S --value V..., or --batch")
	case surfaceSet && len(f.values) == 0:
		return errors.New("--surface needs at least one --value (--value '' judges an empty value)")
	case len(f.values) > 0 && !surfaceSet:
		return errors.New("--value needs --surface")
	case isFlagSet(fs, "agent") && !surfaceSet:
		return errors.New("--agent goes with --surface (a request file and --batch lines name their own agent)")
	}
	return nil
}

func runResolve(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f resolveFlags
	fs := newFlagSet("resolve", resolveSynopsis, stdout, stderr)
	f.register(fs)
	if err := fs.parse(args, func() error { return f.check(fs) }); err != nil {
		return err
	}
	if err := f.resolveDefaults(); err != nil {
		return err
	}
	policy := resolve.Load(f.loadOptions())
	for _, p := range policy.Problems() {
		fmt.Fprintf(stderr, "permtui: policy: %s: %s\n", p.File, p.Message)
	}
	if notice := noPolicyNotice(policy); notice != "" {
		fmt.Fprintln(stderr, "permtui: policy:", notice)
	}
	store, err := grants.Open(filepath.Join(f.stateDir, "grants"))
	if err != nil {
		return err
	}
	var session sessionRules
	if len(f.sessions) > 0 {
		if session, err = readSession(store, f.sessions[0]); err != nil {
			return err
		}
	}

	// v is pi's verdict, printed (a batch prints its own); served is what
	// serve would do; differs says it is not what stdout says.
	var v, served resolve.Verdict
	var differs bool
	switch {
	case f.request != "":
		data, err := safefs.ReadRegularFile(f.request, wire.MaxFileSize)
		if err != nil {
			return err
		}
		req, err := wire.ParseRequest(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f.request, err)
		}
		if id, ok := wire.NormalizeSessionID(req.TargetSessionID); ok && len(f.sessions) == 0 {
			if session, err = readSession(store, id); err != nil {
				return err
			}
		}
		v = policy.Resolve(req, session.grants)
		if req.AccessIntent != nil { // where its cwd lies, as serve finds it (decision 0257)
			policy.Locate(req.AccessIntent.RequesterCwd)
		}
		served = judgment.Verdict(policy, req, session.grants, session.denies)
	case f.batch:
		var err error
		if served, differs, err = resolveBatch(policy, session, stdin, stdout); err != nil {
			return err
		}
	default:
		warnUnknownSurface(stderr, policy, f.surface)
		q := resolve.Query{Agent: f.agent, Surface: f.surface, Values: f.values}
		v, served = judgeFacts(policy, q, session)
	}
	if !f.batch {
		differs = served.Action != v.Action
		if err := writeJSONLine(stdout, toVerdictJSON(v)); err != nil {
			return err
		}
	}
	// stdout stays pi's verdict; the exit status is what serve does
	// (decision 0112), and stderr says when the two differ.
	status, words := servedAs(served.Action)
	if differs {
		fmt.Fprintln(stderr, "permtui: serve would "+words+" instead: "+served.Explanation)
	}
	if f.exitCode && status != exitAllow {
		return exitStatus(status)
	}
	return nil
}

// warnUnknownSurface says when a surface is neither built in nor named by a
// rule: such a query is judged by the "*" fallback, which is right for an
// extension tool and wrong for a typo.
func warnUnknownSurface(stderr io.Writer, policy *resolve.Policy, surface string) {
	if policy.KnownSurface(surface) {
		return
	}
	msg := fmt.Sprintf("permtui resolve: surface %q is neither built in nor named by a rule; only the \"*\" fallback applies", surface)
	if near := policy.NearestSurface(surface); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	fmt.Fprintln(stderr, msg)
}

func isFlagSet(fs flagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func toVerdictJSON(v resolve.Verdict) verdictJSON {
	out := verdictJSON{State: v.Action, Surface: wire.JSString(v.Surface), Explanation: v.Explanation}
	if v.Pattern != nil {
		p := wire.JSString(*v.Pattern)
		out.Pattern = &p
	}
	if v.Origin != "" {
		out.Origin = &v.Origin
	}
	if v.Action == resolve.Deny && v.Reason != "" {
		r := wire.JSString(v.Reason)
		out.Reason = &r
	}
	return out
}

// writeJSONLine prints v as one JSON line that cannot drive the terminal:
// the values may come from a hostile request file (termsafe). Marshal, not
// MarshalNoEscape: v left on the caller's stack stays referenced from
// go-json's pooled map iterator, which crashes the collector (decision 0251).
func writeJSONLine(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", termsafe.EscapeJSON(data))
	return err
}

// errBatchLines reports that some batch lines could not be judged; each got an
// error line in its place so the output stays aligned with the input.
var errBatchLines = errors.New("some --batch lines were not valid JSON facts")

// resolveBatch prints pi's verdict for each line and returns the strictest
// of what serve would do, and whether serve would differ from a printed line
// (then served is the first such line's, when it is the strictest).
func resolveBatch(policy *resolve.Policy, session sessionRules, stdin io.Reader, stdout io.Writer) (served resolve.Verdict, differs bool, err error) {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64*1024), wire.MaxFileSize)
	out := bufio.NewWriterSize(stdout, 64*1024)
	failed := 0
	served.Action = resolve.Allow
	for lineNo := 1; in.Scan(); lineNo++ {
		q, err := parseBatchLine(in.Bytes())
		if err != nil {
			failed++
			if err := writeJSONLine(out, batchError{Error: fmt.Sprintf("line %d: %v", lineNo, err)}); err != nil {
				return served, false, err
			}
			continue
		}
		v, s := judgeFacts(policy, q, session)
		lineDiffers := s.Action != v.Action
		if resolve.Restrictiveness(s.Action) > resolve.Restrictiveness(served.Action) || (lineDiffers && !differs && s.Action == served.Action) {
			served = s
		}
		differs = differs || lineDiffers
		if err := writeJSONLine(out, toVerdictJSON(v)); err != nil {
			return served, false, err
		}
	}
	if err := in.Err(); err != nil {
		return served, false, fmt.Errorf("reading --batch input: %w", err)
	}
	if err := out.Flush(); err != nil {
		return served, false, err
	}
	if failed > 0 {
		return served, false, fmt.Errorf("%w (%d)", errBatchLines, failed)
	}
	return served, differs, nil
}

// judgeFacts is pi's verdict on facts, to print, and what serve would do
// with it, for the exit status.
func judgeFacts(policy *resolve.Policy, q resolve.Query, session sessionRules) (v, served resolve.Verdict) {
	return policy.Evaluate(q, session.grants), judgment.Verdict(policy, judgment.FactsRequest(q), session.grants, session.denies)
}

// sessionRules are what a person recorded for the whole session: serve
// judges with both, its denies first (decision 0104).
type sessionRules struct {
	grants []wire.Grant
	denies []grants.Deny
}

// readSession reads a session's grants and denies. Denies that cannot be
// read are an error: serve asks a person then, and resolve must not judge
// without them (fail closed).
func readSession(store *grants.Store, session string) (sessionRules, error) {
	denies, err := store.Denies(session)
	if err != nil {
		return sessionRules{}, fmt.Errorf("the session denies of %s cannot be read, so serve would ask a person: %w", session, err)
	}
	return sessionRules{grants: store.For(session), denies: denies}, nil
}

// parseBatchLine reads one line of facts with the one JSON reader, as
// JSON.parse would (the last of duplicate keys, lone surrogates kept:
// decision 0190), strictly: an unknown field such as "value" would
// otherwise judge no values. A null field is one not given, a null in a
// list the wrong type (decision 0288). Errors are in the user's terms.
func parseBatchLine(data []byte) (q resolve.Query, err error) {
	const want = `want one JSON object per line, such as {"agent":"a","surface":"bash","values":["ls"]}`
	line, err := jsonparse.Parse(string(data), maxBatchDepth)
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return q, errors.New("empty line; " + want)
	case err != nil:
		return q, errors.New("not valid JSON; " + want)
	case line.Kind != jsonparse.Object:
		return q, errors.New("not a JSON object; " + want)
	}
	for _, m := range line.Members() {
		v, ok := m.Value, true
		if _, known := batchFieldTypes[m.Key]; !known {
			return q, fmt.Errorf("unknown field %q; the fields are agent, surface, values, floor and askingUnits", m.Key)
		} else if v.Kind == jsonparse.Null {
			continue
		}
		switch m.Key {
		case "agent":
			q.Agent, ok = jsonString(v)
		case "surface":
			q.Surface, ok = jsonString(v)
		case "values":
			q.Values, ok = jsonStrings(v)
		case "floor":
			q.Floor, ok = jsonNullableString(v)
		case "askingUnits":
			if q.AskingUnits, ok, err = readUnits(v); err != nil {
				return q, err
			}
		}
		if !ok {
			return q, fmt.Errorf("field %q has the wrong type; want %s", m.Key, batchFieldTypes[m.Key])
		}
	}
	return q, nil
}

// maxBatchDepth bounds a line's nesting: facts nest three deep (the line,
// askingUnits, a unit), so a deeper line is no line of facts.
const maxBatchDepth = 64

var batchFieldTypes = map[string]string{
	"agent": "a string", "surface": "a string", "values": "a list of strings",
	"floor": "a string or null", "askingUnits": "a list of {\"command\",\"floor\"}",
}

func jsonString(v jsonparse.Value) (string, bool) { return v.Str, v.Kind == jsonparse.String }

func jsonNullableString(v jsonparse.Value) (*string, bool) {
	if v.Kind == jsonparse.Null {
		return nil, true
	}
	s, ok := jsonString(v)
	return &s, ok
}

func jsonStrings(v jsonparse.Value) ([]string, bool) {
	out := make([]string, 0, len(v.Items()))
	for _, item := range v.Items() {
		s, ok := jsonString(item)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, v.Kind == jsonparse.Array
}

// readUnits reads askingUnits; a unit's misspelt field would judge an empty
// command, so it is refused by name.
func readUnits(v jsonparse.Value) (units []wire.AskingUnit, ok bool, err error) {
	units = make([]wire.AskingUnit, len(v.Items()))
	for i, item := range v.Items() {
		if item.Kind != jsonparse.Object {
			return nil, false, nil
		}
		for _, m := range item.Members() {
			switch m.Key {
			case "command":
				units[i].Command, ok = jsonString(m.Value)
			case "floor":
				units[i].Floor, ok = jsonNullableString(m.Value)
			default:
				return nil, false, fmt.Errorf("unknown field %q in askingUnits[%d]; a unit's fields are command and floor", m.Key, i)
			}
			if !ok {
				return nil, false, nil
			}
		}
	}
	return units, v.Kind == jsonparse.Array, nil
}
