// Package judgment is how permtui judges an ask, in one pure function that
// serve answers asks with, and simulate and a rule edit's authority diff
// judge with: no caller re-derives a step.
package judgment

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/wire"
)

// Judge is the recorded authority: *resolve.Policy satisfies it.
type Judge interface {
	Resolve(req *wire.Request, grants []wire.Grant) resolve.Verdict
	// Covers: a session rule written as g (a session deny) applies to the
	// request, by the grants' matcher (decision 0104).
	Covers(req *wire.Request, g wire.Grant) bool
}

// problemLister is a Judge (*resolve.Policy) that lists the policy files it
// could not use.
type problemLister interface{ Problems() []resolve.Problem }

// projectHolder is a Judge (*resolve.Policy) loaded for a project:
// WithoutProject is the policy without an untrusted project's files, or
// nil; OutsideProject names the project when a cwd may have a root
// session of another project, and that project's dir when it knows it.
type projectHolder interface {
	WithoutProject() *resolve.Policy
	OutsideProject(cwd string) (project, own string)
}

// Verdict judges req. In order: a session deny that covers the request denies it
// (decision 0104); else the policy with the session's grants, as Served
// takes it. It does no IO.
func Verdict(j Judge, req *wire.Request, sessionGrants []wire.Grant, denies []grants.Deny) resolve.Verdict {
	if v, denied := sessionDenied(j, req, denies); denied {
		return v
	}
	return Served(j, req, sessionGrants, j.Resolve(req, sessionGrants))
}

// Served is what serve does with the policy's verdict v on req: an agent
// name that is a path denies (decision 0147); a policy pi reads but permtui
// cannot hold denies every ask (decision 0177); a request without facts
// goes to a person whatever the judge says (ADR 0008 §4); an allow that
// only an untrusted project's files give, or one for an ask from outside
// the project, goes to a person (decisions 0206, 0234); an allow is held at
// ask while a policy file is broken (decision 0052). v is the judge's verdict with sessionGrants.
// 'permtui resolve' prints v, pi's answer, and exits with Served's.
func Served(j Judge, req *wire.Request, sessionGrants []wire.Grant, v resolve.Verdict) resolve.Verdict {
	if agent := req.Agent(); strings.ContainsAny(agent, `/\`) {
		return resolve.Verdict{Action: resolve.Deny, Surface: v.Surface, Reason: "the agent name " + strconv.Quote(agent) +
			" is a path: pi would read its policy from a file under it that permtui does not judge by",
			Explanation: v.Explanation + " But permtui denies: pi loads agents/<name>.md by joining the name, so the agent " + strconv.Quote(agent) +
				" has its policy in a file permtui does not read (decision 0147)."}
	}
	if unheld, ok := unheldFile(j, req); ok {
		return resolve.Verdict{Action: resolve.Deny, Surface: v.Surface, Reason: "permtui cannot hold the policy file " + unheld +
			" (pi reads it), so it denies every ask until the file is smaller",
			Explanation: v.Explanation + " But permtui denies every ask: the policy file " + strconv.Quote(unheld) +
				" is over what it holds while pi reads it, so one of its denies may apply (decision 0177)."}
	}
	if req.AccessIntent == nil && v.Action != resolve.Ask {
		v = resolve.Verdict{Action: resolve.Ask, Explanation: "The request carries no accessIntent, so a person decides."}
	}
	if req.AccessIntent != nil {
		v = holdProject(j, req, sessionGrants, v)
	}
	if v.Action == resolve.Allow {
		v = holdAllow(j, v)
	}
	return v
}

// holdProject keeps a project's files from deciding where pi might judge
// otherwise. An untrusted project's (holdUntrusted, decision 0206); and an
// ask from a cwd outside the project permtui judges with was judged without
// the project there, whose files pi's root session in it would read, so its
// allow goes to a person unless the session's own grants give it, which pi
// ranks after every file (decision 0234).
func holdProject(j Judge, req *wire.Request, sessionGrants []wire.Grant, v resolve.Verdict) resolve.Verdict {
	ph, ok := j.(projectHolder)
	if !ok {
		return v
	}
	if v.Action != resolve.Deny {
		v = holdUntrusted(ph, req, sessionGrants, v)
	}
	cwd := req.AccessIntent.RequesterCwd
	v.OutsideProject, v.OwnProject = ph.OutsideProject(cwd)
	if v.OutsideProject == "" || v.Action != resolve.Allow || v.Origin == resolve.OriginSession {
		return v
	}
	v.Action = resolve.Ask
	if v.OwnProject != "" { // a project below the guessed one (decision 0257)
		v.Explanation += " But a person decides: the cwd " + strconv.Quote(cwd) + " has its own project (" +
			strconv.Quote(filepath.Join(v.OwnProject, ".pi")) + ") that permtui does not judge with: it judges with the project " +
			strconv.Quote(v.OutsideProject) + ", and a root session there would apply that project's files " +
			"(name the session and its project with --session and --project; decision 0257)."
		return v
	}
	v.Explanation += " But a person decides: judged without the project at " + strconv.Quote(cwd) +
		", where the ask comes from: permtui judges with the project " + strconv.Quote(v.OutsideProject) +
		", and a root session there would apply that project's files, which permtui did not read " +
		"(name the session and its project with --session and --project; decisions 0234, 0257)."
	return v
}

// holdUntrusted: pi reads an untrusted project's files only for a project
// it trusts, which permtui cannot see, so unless a person said the project
// is trusted (decision 0206) an ask the policy without them denies is
// denied, and an allow it does not give goes to a person. The project's
// denies and asks stand.
func holdUntrusted(ph projectHolder, req *wire.Request, sessionGrants []wire.Grant, v resolve.Verdict) resolve.Verdict {
	outside := ph.WithoutProject()
	if outside == nil {
		return v
	}
	wv := outside.Resolve(req, sessionGrants)
	by := "the project's policy files"
	if r := v.Rule; r != nil && r.File != "" && (r.Origin == resolve.OriginProject || r.Origin == resolve.OriginProjectAgent) {
		by = "the project's " + strconv.Quote(r.File)
	}
	trust := "the project is not trusted, so "
	switch {
	case wv.Action == resolve.Deny:
		wv.Explanation += " T" + by[1:] + " would make it " + string(v.Action) + "; " + trust +
			"its files loosen no deny (pass --trust-project to trust it; decision 0206)."
		return wv
	case v.Action == resolve.Allow && wv.Action != resolve.Allow:
		v.Action = resolve.Ask
		v.Explanation += " Allowed only by " + by + " (without the project's files: " + string(wv.Action) +
			"); " + trust + "a person decides (pass --trust-project to trust it; decision 0206)."
	}
	return v
}

// unheldFile names a policy file pi reads for req that permtui could not
// hold: a shared one, or the requesting agent's, whose name a case-folding
// file system finds in any case (decision 0241).
func unheldFile(j Judge, req *wire.Request) (string, bool) {
	pl, ok := j.(problemLister)
	if !ok {
		return "", false
	}
	agent := req.Agent()
	for _, pr := range pl.Problems() {
		if pr.Unheld && (pr.Agent == "" || strings.EqualFold(pr.Agent, agent)) {
			return pr.File, true
		}
	}
	return "", false
}

// FactsRequest is a request that carries only q's facts: for judging facts
// that did not arrive as a request (recorded asks, a rule edit's witnesses).
func FactsRequest(q resolve.Query) *wire.Request {
	return &wire.Request{AccessIntent: &wire.AccessIntent{
		Surface: q.Surface, MatchValues: q.Values, Floor: q.Floor, AskingUnits: q.AskingUnits,
		Principal: wire.Principal{AgentName: q.Agent},
	}}
}

// sessionDenied judges the session's denies before grants and the policy:
// one that covers the request denies it, whatever would allow it.
func sessionDenied(j Judge, req *wire.Request, denies []grants.Deny) (resolve.Verdict, bool) {
	if req.AccessIntent == nil {
		return resolve.Verdict{}, false
	}
	for _, d := range denies {
		if !j.Covers(req, d.Grant) {
			continue
		}
		return resolve.Verdict{
			Action: resolve.Deny, Surface: req.AccessIntent.Surface, Pattern: new(d.Pattern),
			Origin: resolve.OriginSession, Reason: d.Reason,
			Rule: &resolve.RuleRef{Surface: d.Surface, Pattern: d.Pattern, Action: resolve.Deny, Origin: resolve.OriginSession},
			Explanation: "Deny. A person denied " + strconv.Quote(d.Surface) + " " + strconv.Quote(d.Pattern) +
				" for the whole session; it covers this ask and wins over any allow: " + strconv.Quote(d.Reason),
		}, true
	}
	return resolve.Verdict{}, false
}

// holdAllow turns an allow into ask while any policy file is unreadable or
// invalid: the missing file may hold the deny that would have won, so
// permtui, the judge, widens nothing until it is fixed (decision 0052).
// Denies and asks stand.
func holdAllow(judge Judge, v resolve.Verdict) resolve.Verdict {
	pl, ok := judge.(problemLister)
	if !ok {
		return v
	}
	problems := pl.Problems()
	if len(problems) == 0 {
		return v
	}
	v.Action = resolve.Ask
	v.Explanation += " permtui auto-allows nothing while a policy file is unreadable or invalid (" +
		strconv.Quote(problems[0].File) + "), so a person decides."
	return v
}
