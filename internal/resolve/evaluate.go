package resolve

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/wire"
)

// ValueSurface reports whether pi judges surface by its match values; every
// other surface (an extension tool) is judged on the literal value "*".
func ValueSurface(surface string) bool {
	name := jsTrim(surface)
	return AliasSurface(surface) || name == "bash" || name == "skill"
}

// AliasSurface reports whether pi judges every value of surface (a path
// and its aliases, mcp's names), not only the first (§6.4): every built-in
// surface but bash and skill.
func AliasSurface(surface string) bool {
	return surface != "bash" && surface != "skill" && slices.Contains(builtinSurfaces, surface)
}

// starValues stands in for an empty value list, and is the only value of a
// surface that carries no value of its own.
var starValues = []string{"*"}

// mcpStatusValues are pi's mcp targets for an input naming no tool, server
// or action: a padded "mcp" surface, whose input is {}.
var mcpStatusValues = []string{"mcp_status", "mcp"}

// Restrictiveness orders actions: deny 2, ask 1, allow 0.
func Restrictiveness(a Action) int {
	switch a {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

// outcome is the result of one surface against one value list.
type outcome struct {
	rule    *rule       // nil when a session grant decided
	grant   *wire.Grant // the deciding grant
	value   string      // the first value the winner matched
	action  Action
	origin  string
	pattern *string
	yolo    bool // yoloMode turned an ask into this allow
}

// judge finds the last matching rule (session grants sit after every config
// rule) and applies yoloMode. It does not allocate.
func (p *Policy) judge(rs *ruleset, surface string, values []string, grants []wire.Grant) outcome {
	for gi := len(grants) - 1; gi >= 0; gi-- {
		g := &grants[gi]
		if !surfaceCovered(g.Surface, p.grantPattern(g.Surface), surface) {
			continue
		}
		pattern := p.grantPattern(g.Pattern)
		for _, v := range values {
			if pattern.Match(v) {
				return outcome{grant: g, value: v, action: Allow, origin: OriginSession}
			}
		}
	}
	// The winner is the highest rule matching any value: search per value,
	// each search only above the best found so far.
	best := int32(-1)
	group := rs.bySurface[surface]
	for _, v := range values {
		if group != nil {
			best = group.lastMatch(rs.rules, v, best)
		}
		for k := len(rs.wild) - 1; k >= 0 && rs.wild[k] > best; k-- {
			r := &rs.rules[rs.wild[k]]
			if r.surface.Match(surface) && r.value.Match(v) {
				best = rs.wild[k]
				break
			}
		}
	}
	if best < 0 {
		return outcome{action: Ask} // only without a default rule
	}
	r := &rs.rules[best]
	o := outcome{rule: r, action: r.action, origin: r.origin, pattern: r.pattern}
	for _, v := range values {
		if r.value.Match(v) {
			o.value = v // the first value, in the given order, that the winner matches
			break
		}
	}
	if o.action == Ask && p.yolo {
		o.action, o.origin, o.yolo = Allow, OriginYolo, true
	}
	return o
}

// surfaceCovered says whether a grant recorded on grantSurface (compiled)
// applies to a query on surface. A grant on a bare family covers both
// members (§8.1).
func surfaceCovered(grantSurface string, compiled *Pattern, surface string) bool {
	if _, _, family := familyMembers(grantSurface); family {
		fam, ok := Family(surface)
		return ok && fam == grantSurface
	}
	return compiled.Match(surface)
}

// bashValue drops comment lines (first non-space character '#') and trims;
// when nothing remains, the raw text is used (§6.4).
func bashValue(raw string) string {
	if strings.IndexByte(raw, '#') < 0 {
		if t := jsTrim(raw); t != "" {
			return t
		}
		return raw
	}
	kept := slices.DeleteFunc(strings.Split(raw, "\n"), func(line string) bool { return strings.HasPrefix(jsTrim(line), "#") })
	if t := jsTrim(strings.Join(kept, "\n")); t != "" {
		return t
	}
	return raw
}

// judged is one surface's full answer: the fold and the request floor applied.
type judged struct {
	outcome
	surface  string // the surface evaluated (a member for a folded family)
	member   string
	folded   bool   // a bare family was judged by both members
	otherAct Action // the other member's result
	otherSur string
	floor    string // the request floor that touched an allow
	floorHow string // "clamped", "grant" or "yolo"
}

// judgeSurface evaluates one query surface with §6.4's value mapping and the
// family fold of §6.3, then applies the request floor.
func (p *Policy) judgeSurface(rs *ruleset, surface string, values []string, floor *string, grants []wire.Grant) judged {
	var one [1]string
	name := surface // what rule surfaces are matched against
	switch {
	case AliasSurface(surface):
		if len(values) == 0 {
			values = starValues
		}
	default:
		// Every other surface becomes a tool intent. Its input is built
		// from the surface as sent ({command} only for exactly "bash",
		// {name} only for exactly "skill", else {}); pi then trims the name
		// and reads that input (normalizeInput); no fold follows.
		name = jsTrim(surface)
		first := ""
		if len(values) > 0 && surface == name {
			first = values[0]
		}
		switch name {
		case "bash":
			one[0] = bashValue(first)
			values = one[:]
		case "skill":
			one[0] = first
			values = one[:]
			if surface != name {
				values = starValues // no name in the input
			}
		case "mcp":
			values = mcpStatusValues // mcp's targets for an empty input
		default:
			values = starValues
		}
	}
	var j judged
	if readSurface, writeSurface, ok := familyMembers(surface); ok {
		read := p.judge(rs, readSurface, values, grants)
		write := p.judge(rs, writeSurface, values, grants)
		j = judged{outcome: read, surface: readSurface, member: readSurface, folded: true, otherAct: write.action, otherSur: writeSurface}
		if Restrictiveness(write.action) > Restrictiveness(read.action) {
			j = judged{outcome: write, surface: writeSurface, member: writeSurface, folded: true, otherAct: read.action, otherSur: readSurface}
		}
	} else {
		j = judged{outcome: p.judge(rs, name, values, grants), surface: name}
	}
	if floor != nil && j.action == Allow {
		j.floor = *floor
		switch {
		case j.grant != nil:
			j.floorHow = "grant"
		case p.yolo:
			j.floorHow = "yolo"
			j.origin, j.pattern = OriginYolo, floor
		default:
			j.floorHow = "clamped"
			j.action, j.pattern = Ask, floor
		}
	}
	return j
}

// Evaluate judges child-fixed facts for q.Agent against this policy and the
// serving session's grants. It does no IO.
func (p *Policy) Evaluate(q Query, grants []wire.Grant) Verdict {
	rs := p.rulesetFor(q.Agent)
	if len(q.AskingUnits) == 0 {
		j := p.judgeSurface(rs, q.Surface, q.Values, q.Floor, grants)
		return p.verdict(q, rs, j, "")
	}
	best, bestUnit := judged{}, -1
	var one [1]string
	for i, u := range q.AskingUnits {
		one[0] = u.Command
		j := p.judgeSurface(rs, "bash", one[:], u.Floor, grants)
		if bestUnit < 0 || Restrictiveness(j.action) > Restrictiveness(best.action) {
			best, bestUnit = j, i
		}
	}
	prefix := "Judged " + strconv.Itoa(len(q.AskingUnits)) + " asking bash units; the most restrictive (first on a tie) is " +
		strconv.Quote(q.AskingUnits[bestUnit].Command) + ". "
	v := p.verdict(q, rs, best, prefix)
	v.Unit = q.AskingUnits[bestUnit].Command
	return v
}

// Resolve judges a request exactly as sent. A request without a usable
// accessIntent always goes to a person (pi-permission-system's ADR 0008 §4).
func (p *Policy) Resolve(req *wire.Request, grants []wire.Grant) Verdict {
	if req == nil || req.AccessIntent == nil {
		missing := "no accessIntent"
		if req != nil {
			for _, d := range req.Dropped {
				if d.Field == "accessIntent" {
					missing = "no accessIntent: it was malformed and dropped, " + printable(d.Reason)
				}
			}
		}
		return Verdict{Action: Ask, Explanation: "Ask. A person decides: the request carries no facts (" + missing +
			"), and recorded policy never auto-answers a request without facts (pi-permission-system's ADR 0008 §4)."}
	}
	return p.Evaluate(QueryOf(req.AccessIntent), grants)
}

// QueryOf is a request's facts as Evaluate takes them.
func QueryOf(ai *wire.AccessIntent) Query {
	return Query{Agent: ai.Principal.AgentName, Surface: ai.Surface, Values: ai.MatchValues, Floor: ai.Floor, AskingUnits: ai.AskingUnits}
}

// LegacyHint judges a request without accessIntent on its legacy surface
// and value (what a 20.7.3 child sends) for the person to see. That text is
// the child's own description, not facts, so the result never decides. It
// is nil for a request with facts or without a legacy surface.
func (p *Policy) LegacyHint(req *wire.Request, grants []wire.Grant) *Verdict {
	if req == nil || req.AccessIntent != nil || req.Surface == nil || *req.Surface == "" {
		return nil
	}
	var values []string
	if req.Value != nil {
		values = []string{*req.Value}
	}
	return new(p.Evaluate(Query{Agent: req.RequesterAgentName, Surface: *req.Surface, Values: values}, grants))
}

// DecidedBy is the wire provenance of a rule decision: {kind:"rule",
// surface, pattern, origin}. It is nil for a verdict without facts.
func (v Verdict) DecidedBy() *wire.DecisionSource {
	if v.Rule == nil {
		return nil
	}
	var origin *string
	if v.Origin != "" {
		origin = new(v.Origin)
	}
	return wire.RuleDecision(v.Surface, v.Pattern, origin)
}

var actionWords = map[Action]string{Allow: "Allow", Ask: "Ask", Deny: "Deny"}

// resembledAgent is the agent file name agent matches but for case and
// blanks at its ends, the least such; "" for none. No allocation: it runs
// for every ask of an agent without a file.
func (p *Policy) resembledAgent(agent string) string {
	trimmed, best := strings.TrimSpace(agent), ""
	for name := range p.agents {
		if name != agent && strings.EqualFold(name, trimmed) && (best == "" || name < best) {
			best = name
		}
	}
	return best
}

// foldedAgent is the agent whose file pi opens for agent, a name without a
// file of its own, on a case-folding file system: the least name differing
// only by case; "" for none, or where the file system tells case apart.
func (p *Policy) foldedAgent(agent string) string {
	if _, own := p.agents[agent]; !p.foldsCase || agent == "" || own {
		return ""
	}
	// Not resembledAgent: it trims blanks, which are no case ("Builder "
	// folds to "builder ", never to "builder").
	best := ""
	for name := range p.agents {
		if strings.EqualFold(name, agent) && (best == "" || name < best) {
			best = name
		}
	}
	return best
}

// verdict turns a judged surface into a Verdict with its explanation.
func (p *Policy) verdict(q Query, rs *ruleset, j judged, prefix string) Verdict {
	v := Verdict{
		Action:  j.action,
		Surface: q.Surface,
		Pattern: j.pattern,
		Origin:  j.origin,
		Member:  j.member,
		Value:   j.value,
		// An agent without a file is judged by the shared ruleset.
		AgentWithoutFile: q.Agent != "" && (rs == p.base || rs == p.unlisted),
	}
	if v.AgentWithoutFile {
		v.AgentResembles = p.resembledAgent(q.Agent)
	}
	if j.floorHow != "" && j.floorHow != "grant" {
		v.Floor = j.floor
	}
	if j.yolo || j.floorHow == "yolo" {
		v.Yolo = p.yoloFrom
	}
	var b strings.Builder
	b.Grow(512)
	b.WriteString(actionWords[j.action])
	b.WriteString(". ")
	b.WriteString(prefix)
	if j.folded {
		writeAll(&b, "The direction is unproven, so both members were judged: ", j.surface, " gives ", string(j.outcome.action),
			", ", j.otherSur, " gives ", string(j.otherAct), "; ", j.member, " decides (more restrictive, read on a tie). ")
	}
	switch {
	case j.grant != nil:
		v.Rule = &RuleRef{Surface: j.grant.Surface, Pattern: j.grant.Pattern, Action: Allow, Origin: OriginSession, Index: len(rs.rules)}
		v.Pattern = new(j.grant.Pattern)
		writeAll(&b, "The whole-session grant ", printable(j.grant.Surface), " ")
		writeQuoted(&b, j.grant.Pattern)
		b.WriteString(" matches ")
		writeQuoted(&b, j.value)
		b.WriteString("; session grants come after every config rule, so it allows.")
	case j.rule != nil:
		r := j.rule
		v.Rule = &r.ref
		if r.action == Deny {
			v.Reason = r.reason
		}
		if r.layer == layerDefault {
			b.WriteString("No specific rule matches ")
			writeQuoted(&b, j.value)
			writeAll(&b, " on ", printable(j.surface), ", so ", r.desc, " applies.")
		} else {
			b.WriteString("The last rule matching ")
			writeQuoted(&b, j.value)
			writeAll(&b, " on ", printable(j.surface), " is ", r.desc, ".")
		}
		if r.ref.FailClosed {
			writeAll(&b, " The fail-closed floor turned its allow into ask because ", floorCause(rs.floor), ".")
		}
	default:
		b.WriteString("No rule matched.")
	}
	if j.yolo {
		writeAll(&b, " Then yoloMode (", p.yoloFrom, ") turns this ask into allow.")
	}
	switch j.floorHow {
	case "clamped":
		writeAll(&b, " The child marked this ask with the floor ", printable(j.floor), ", so an allow from a rule is clamped to ask.")
	case "yolo":
		writeAll(&b, " The child marked this ask with the floor ", printable(j.floor), "; under yoloMode (", p.yoloFrom, ") the allow stands.")
	case "grant":
		writeAll(&b, " The child's floor ", printable(j.floor), " does not hold back a session grant.")
	}
	if name := p.foldedAgent(q.Agent); name != "" && rs == p.agents[name] {
		writeAll(&b, " Agent ", strconv.Quote(printable(q.Agent)), " has no file by that name; this file system finds agent ",
			strconv.Quote(printable(name)), "'s file for it, as pi opens it, so that file's rules judged it.")
	}
	v.Explanation = b.String()
	return v
}

func writeAll(b *strings.Builder, parts ...string) {
	for _, s := range parts {
		b.WriteString(s)
	}
}

// writeQuoted writes s as a Go-quoted string, so control characters in
// untrusted values stay visible and inert.
func writeQuoted(b *strings.Builder, s string) {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f || r == '"' || r == '\\' }) {
		var scratch [128]byte
		b.Write(strconv.AppendQuote(scratch[:0], s))
		return
	}
	b.WriteByte('"') // plain printable ASCII quotes as itself
	b.WriteString(s)
	b.WriteByte('"')
}

// printable returns s as it is when every character prints, and its
// Go-quoted form otherwise (and "" for nothing), so names, paths and values from a config or a
// child never carry control characters or invalid UTF-8 into a sentence.
func printable(s string) string {
	if s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}

func floorCause(problems []Problem) string {
	parts := make([]string, len(problems))
	for i, pr := range problems {
		parts[i] = printable(pr.File) + " could not be used (" + pr.cause + ")"
	}
	return strings.Join(parts, "; ")
}

// Covers reports whether a session rule written as g (a grant's surface and
// pattern; a session deny is one) applies to the request, with the grants'
// matcher: to any of its match values, or any asking unit of a bash chain.
// A query on a bare family is covered when either member is, so a deny
// fails closed. A request without facts is never covered.
func (p *Policy) Covers(req *wire.Request, g wire.Grant) bool {
	return covers(req, g, p.grantPattern, true)
}

// Covers is Policy.Covers without a policy: for a front end that shows
// what a grant covers where no policy is held (a hub approver), and the
// console's dialogs, which must cover what serve will.
func Covers(req *wire.Request, g wire.Grant, home string) bool {
	return covers(req, g, homeCompiler(home), true)
}

// CoversValues is Covers over the match values alone: the asks a grant
// answers, where a chain's unit it covers leaves the others to ask.
func CoversValues(req *wire.Request, g wire.Grant, home string) bool {
	return covers(req, g, homeCompiler(home), false)
}

func homeCompiler(home string) func(string) *Pattern {
	return func(text string) *Pattern { return new(CompilePattern(text, home)) }
}

func covers(req *wire.Request, g wire.Grant, compile func(string) *Pattern, units bool) bool {
	if req == nil || req.AccessIntent == nil {
		return false
	}
	ai := req.AccessIntent
	surfaces := []string{ai.Surface}
	if read, write, ok := familyMembers(ai.Surface); ok {
		surfaces = append(surfaces, read, write)
	}
	gs := compile(g.Surface)
	if !slices.ContainsFunc(surfaces, func(s string) bool { return surfaceCovered(g.Surface, gs, s) }) {
		return false
	}
	pattern := compile(g.Pattern)
	if slices.ContainsFunc(ai.MatchValues, func(v string) bool {
		// A bash value is also tried as pi judges it, without comment lines.
		return pattern.Match(v) || jsTrim(ai.Surface) == "bash" && pattern.Match(bashValue(v))
	}) {
		return true
	}
	return units && slices.ContainsFunc(ai.AskingUnits, func(u wire.AskingUnit) bool { return pattern.Match(u.Command) })
}
