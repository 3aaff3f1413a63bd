package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

const resolveSynopsis = `resolve [flags] (--request FILE | --agent A --surface S --value V... | --batch)

Judges facts against the root's policy as the serving node would and prints the
verdict as JSON: state, pattern, origin, reason, surface, explanation.
--batch reads JSON lines {"agent","surface","values","floor"?,"askingUnits"?}
from stdin and prints one verdict line per input line, in order.`

// verdictJSON is the printed form of a verdict.
type verdictJSON struct {
	State       resolve.Action `json:"state"`
	Pattern     *string        `json:"pattern"`
	Origin      *string        `json:"origin"`
	Reason      *string        `json:"reason"`
	Surface     string         `json:"surface"`
	Explanation string         `json:"explanation"`
}

// batchError stands in the output for a batch line that could not be judged.
type batchError struct {
	Error string `json:"error"`
}

// batchLine is one --batch input.
type batchLine struct {
	Agent       string            `json:"agent"`
	Surface     string            `json:"surface"`
	Values      []string          `json:"values"`
	Floor       *string           `json:"floor"`
	AskingUnits []batchAskingUnit `json:"askingUnits"`
}

type batchAskingUnit struct {
	Command string  `json:"command"`
	Floor   *string `json:"floor"`
}

func runResolve(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c common
	var request, agent, surface string
	var values listFlag
	var batch bool
	fs := newFlagSet("resolve", resolveSynopsis, stdout, stderr)
	c.register(fs)
	fs.StringVar(&request, "request", "", "judge this request file")
	fs.StringVar(&agent, "agent", "", "principal agent name (\"\" = no agent scope)")
	fs.StringVar(&surface, "surface", "", "accessIntent surface, e.g. bash, path_write, external_directory_read")
	fs.Var(&values, "value", "a match value (repeatable)")
	fs.BoolVar(&batch, "batch", false, "read JSON lines from stdin, print one verdict per line")
	if err := fs.parse(args); err != nil {
		return err
	}
	forms := 0
	for _, set := range []bool{request != "", surface != "" || len(values) > 0, batch} {
		if set {
			forms++
		}
	}
	if forms != 1 {
		fmt.Fprintln(stderr, "give exactly one of --request FILE, --surface S --value V..., or --batch")
		fs.Usage()
		return errUsage
	}
	if err := c.resolveDefaults(); err != nil {
		return err
	}
	policy := resolve.Load(c.loadOptions())
	for _, p := range policy.Problems() {
		fmt.Fprintf(stderr, "permtui: policy: %s: %s\n", p.File, p.Message)
	}
	grants, err := resolve.OpenGrants(filepath.Join(c.stateDir, "grants"))
	if err != nil {
		return err
	}
	var sessionGrants []wire.Grant
	if len(c.sessions) > 0 {
		sessionGrants = grants.For(c.sessions[0])
	}

	switch {
	case request != "":
		data, err := wire.ReadRegularFile(request, wire.MaxFileSize)
		if err != nil {
			return err
		}
		req, err := wire.ParseRequest(data)
		if err != nil {
			return fmt.Errorf("%s: %w", request, err)
		}
		if len(c.sessions) == 0 {
			if id, ok := wire.NormalizeSessionID(req.TargetSessionID); ok {
				sessionGrants = grants.For(id)
			}
		}
		return writeVerdict(stdout, policy.Resolve(req, sessionGrants))
	case batch:
		return resolveBatch(policy, sessionGrants, stdin, stdout)
	default:
		q := resolve.Query{Agent: agent, Surface: surface, Values: values}
		return writeVerdict(stdout, policy.Evaluate(q, sessionGrants))
	}
}

func toVerdictJSON(v resolve.Verdict) verdictJSON {
	out := verdictJSON{State: v.Action, Pattern: v.Pattern, Surface: v.Surface, Explanation: v.Explanation}
	if v.Origin != "" {
		out.Origin = &v.Origin
	}
	if v.Action == resolve.Deny && v.Reason != "" {
		out.Reason = &v.Reason
	}
	return out
}

func writeVerdict(w io.Writer, v resolve.Verdict) error {
	data, err := json.MarshalNoEscape(toVerdictJSON(v))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// errBatchLines reports that some batch lines could not be judged; each got an
// error line in its place so the output stays aligned with the input.
var errBatchLines = errors.New("some --batch lines were not valid JSON facts")

func resolveBatch(policy *resolve.Policy, grants []wire.Grant, stdin io.Reader, stdout io.Writer) error {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64*1024), wire.MaxFileSize)
	out := bufio.NewWriterSize(stdout, 64*1024)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	failed := 0
	for lineNo := 1; in.Scan(); lineNo++ {
		var line batchLine
		if err := json.Unmarshal(in.Bytes(), &line); err != nil {
			failed++
			if err := enc.Encode(batchError{Error: fmt.Sprintf("line %d: %v", lineNo, err)}); err != nil {
				return err
			}
			continue
		}
		q := resolve.Query{Agent: line.Agent, Surface: line.Surface, Values: line.Values, Floor: line.Floor}
		for _, u := range line.AskingUnits {
			q.AskingUnits = append(q.AskingUnits, wire.AskingUnit{Command: u.Command, Floor: u.Floor})
		}
		if err := enc.Encode(toVerdictJSON(policy.Evaluate(q, grants))); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return fmt.Errorf("reading --batch input: %w", err)
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%w (%d)", errBatchLines, failed)
	}
	return nil
}
