package resolve

import (
	"strconv"
	"strings"
)

// Origins of rules (ruleset-semantics §1).
const (
	OriginGlobal       = "global"
	OriginProject      = "project"
	OriginAgent        = "agent"
	OriginProjectAgent = "project-agent"
	OriginBuiltin      = "builtin"
	OriginBaseline     = "baseline"
	OriginSession      = "session"
	OriginYolo         = "yolo"
	OriginFailClosed   = "fail-closed"
)

type layer uint8

const (
	layerDefault layer = iota
	layerBaseline
	layerConfig
)

// rule is one compiled rule of a composed ruleset.
type rule struct {
	surface Pattern
	value   Pattern
	action  Action // effective: after the fail-closed floor
	reason  string
	origin  string // effective: fail-closed when floored
	layer   layer
	pattern *string // the reported matchedPattern: config rules only
	ref     RuleRef // the rule as written, for explanations
	desc    string  // the rule in plain words
	// mapFallback: the default rule's "*" is a pattern map, so U is ask
	// but its origin is the scope of that map's "*" entry.
	mapFallback bool
}

// ruleset is the composed, compiled policy for one agent name.
type ruleset struct {
	rules     []rule
	bySurface map[string]*ruleGroup // rules whose surface pattern is a plain name
	wild      []int32               // rules whose surface pattern has wildcards
	floor     []Problem             // the invalid non-global scopes behind the fail-closed floor
}

// familyMembers returns the read and write members of a bare family.
func familyMembers(surface string) (read, write string, ok bool) {
	switch surface {
	case "path":
		return "path_read", "path_write", true
	case "external_directory":
		return "external_directory_read", "external_directory_write", true
	}
	return "", "", false
}

// expandDirectional replaces a bare family key of one scope by its two
// members (ADR 0013 §4): a member the scope does not name copies the bare
// value; a member it names gets the bare entries it does not redefine,
// followed by its own. Keys land as pi's JavaScript object assignments put
// them (decision 0025): walking the scope in order, a member already placed
// (by its own explicit key) keeps its slot, a new one is appended where the
// bare key stands, and an explicit member key after the bare key is absorbed.
func expandDirectional(perms *permissions) *permissions {
	if _, ok := perms.get("path"); !ok {
		if _, ok := perms.get("external_directory"); !ok {
			return perms
		}
	}
	out := newOrdered[surfaceValue]()
	keys, vals := perms.all()
	for i, key := range keys {
		read, write, bare := familyMembers(key)
		if !bare {
			if _, absorbed := out.get(key); !absorbed {
				out.set(key, vals[i])
			}
			continue
		}
		for _, member := range [...]string{read, write} {
			out.set(member, sugarMember(vals[i], perms, member))
		}
	}
	return out
}

// sugarMember is one member built from the bare value and the scope's
// explicit entry for that member, if any.
func sugarMember(bare surfaceValue, perms *permissions, member string) surfaceValue {
	explicit, ok := perms.get(member)
	if !ok {
		return bare
	}
	own := explicit.patterns
	merged := newOrdered[entry]()
	baseKeys, baseVals := bare.patterns.all()
	for j, pat := range baseKeys {
		if _, redefined := own.get(pat); !redefined {
			merged.set(pat, baseVals[j])
		}
	}
	ownKeys, ownVals := own.all()
	for j, pat := range ownKeys {
		merged.set(pat, ownVals[j])
	}
	return surfaceValue{patterns: merged}
}

// mergeScopes merges scopes low → high per top-level key (§4.1): two pattern
// maps merge shallowly, a redefined pattern keeping its old slot; in every
// other case the higher value replaces the lower one. Inputs are not changed.
func mergeScopes(scopes []*permissions) *permissions {
	merged := newOrdered[surfaceValue]()
	for _, perms := range scopes {
		keys, vals := perms.all()
		for i, key := range keys {
			over := vals[i]
			base, ok := merged.get(key)
			if !ok || base.state || over.state {
				merged.set(key, over)
				continue
			}
			m := newOrdered[entry]()
			for _, side := range [...]*ordered[entry]{base.patterns, over.patterns} {
				pats, entries := side.all()
				for j, pat := range pats {
					m.set(pat, entries[j])
				}
			}
			merged.set(key, surfaceValue{patterns: m})
		}
	}
	return merged
}

var mcpBaseline = [...]string{"mcp_status", "mcp_list", "mcp_search", "mcp_describe", "mcp_connect"}

// MCPBaseline lists the mcp values pi's baseline allows once any config rule
// allows mcp.
func MCPBaseline() []string { return append([]string(nil), mcpBaseline[:]...) }

// compose builds the ruleset of §4.4 items 1–5 from merged scopes: default
// rule, MCP baseline, config rules, Pi MCP relocation, fail-closed floor.
func compose(merged *permissions, floor []Problem, home string) *ruleset {
	configCount, relocated, mcpAllow := 0, 0, false
	keys, vals := merged.all()
	for i, key := range keys {
		if key == "*" {
			continue
		}
		patterns := vals[i].patterns
		configCount += patterns.Len()
		_, entries := patterns.all()
		for _, e := range entries {
			mcpAllow = mcpAllow || (key == "mcp" && e.action == Allow)
		}
		if _, whole := patterns.get("*"); whole && canNamePiMcpTool(key) {
			relocated++
		}
	}
	rules := make([]rule, 0, 1+len(mcpBaseline)+configCount+relocated)
	rules = append(rules, defaultRule(merged, home))
	// The baseline is emitted only when some config rule allows mcp, and
	// sits before the config rules so a config mcp "*" shadows it.
	mcp := CompilePattern("mcp", home)
	if mcpAllow {
		for _, pat := range mcpBaseline {
			r := rule{surface: mcp, value: CompilePattern(pat, home), action: Allow, origin: OriginBaseline, layer: layerBaseline}
			r.ref = RuleRef{Surface: "mcp", Pattern: pat, Action: Allow, Origin: OriginBaseline}
			rules = append(rules, r)
		}
	}
	configStart := len(rules)
	for i, key := range keys {
		if key == "*" {
			continue
		}
		surface := CompilePattern(key, home)
		pats, entries := vals[i].patterns.all()
		for j, pat := range pats {
			rules = append(rules, configRule(surface, key, pat, entries[j], home))
		}
	}
	// Pi MCP tool keys (mcp__server__tool, or an mcp__ wildcard) written as
	// whole-tool rules are also copied onto the mcp surface (NEW, #1001).
	for i := configStart; i < configStart+configCount; i++ {
		if r := &rules[i]; r.ref.Pattern == "*" && canNamePiMcpTool(r.ref.Surface) {
			e := entry{action: r.ref.Action, reason: r.reason, origin: r.ref.Origin, file: r.ref.File}
			rules = append(rules, configRule(mcp, "mcp", r.ref.Surface, e, home))
		}
	}
	return indexRules(rules, floor)
}

// defaultRule is §4.4 item 1: "*" → "*" with the action of the "*" key,
// ask when there is none.
func defaultRule(merged *permissions, home string) rule {
	def := rule{surface: CompilePattern("*", home), value: CompilePattern("*", home), action: Ask, origin: OriginBuiltin, layer: layerDefault}
	def.ref = RuleRef{Surface: "*", Pattern: "*", Action: Ask, Origin: OriginBuiltin}
	// U is a "*" state string; its origin is that of the "*" → "*" entry,
	// which pi also reads from a "*" pattern map whose action it ignores.
	if u, ok := merged.get("*"); ok {
		if e, ok := u.patterns.get("*"); ok {
			if u.state {
				def.action = e.action
			}
			def.origin, def.mapFallback = e.origin, !u.state
			def.ref.Action, def.ref.Origin, def.ref.File = def.action, e.origin, e.file
		}
	}
	return def
}

// indexRules finishes a compiled ruleset: each rule's index and description,
// every allow held to ask under a fail-closed floor, and the rules grouped
// by literal surface for lookup.
func indexRules(rules []rule, floor []Problem) *ruleset {
	rs := &ruleset{rules: rules, bySurface: map[string]*ruleGroup{}, floor: floor}
	plain := map[string][]int32{}
	for i := range rs.rules {
		r := &rs.rules[i]
		r.ref.Index = i
		if len(floor) > 0 && r.action == Allow {
			r.action, r.origin, r.ref.FailClosed = Ask, OriginFailClosed, true
		}
		r.desc = describeRule(r, len(rs.rules))
		if s := &r.surface; s.full.literal && !s.hasAlt {
			plain[s.full.expr] = append(plain[s.full.expr], int32(i))
		} else {
			rs.wild = append(rs.wild, int32(i))
		}
	}
	for surface, ids := range plain {
		rs.bySurface[surface] = buildGroup(rs.rules, ids)
	}
	return rs
}

// canNamePiMcpTool: the key is a Pi MCP tool name (mcp__<server>__<tool>,
// both parts non-empty) or an mcp__ wildcard; a plain mcp__foo names none.
func canNamePiMcpTool(key string) bool {
	rest, ok := strings.CutPrefix(key, "mcp__")
	if !ok {
		return false
	}
	sep := strings.Index(rest, "__")
	return (sep > 0 && sep+2 < len(rest)) || strings.ContainsAny(rest, "*?")
}

func configRule(surface Pattern, surfaceText, pat string, e entry, home string) rule {
	r := rule{surface: surface, value: CompilePattern(pat, home), action: e.action, origin: e.origin, layer: layerConfig, pattern: new(pat)}
	if e.action == Deny {
		r.reason = e.reason
	}
	r.ref = RuleRef{Surface: surfaceText, Pattern: pat, Action: e.action, Origin: e.origin, File: e.file}
	return r
}

var scopeNames = map[string]string{
	OriginGlobal:       "the global config",
	OriginProject:      "the project config",
	OriginAgent:        "the agent file",
	OriginProjectAgent: "the project agent file",
}

// describeRule says in plain words what the rule is and where it came from.
func describeRule(r *rule, total int) string {
	var b strings.Builder
	b.Grow(96 + len(r.ref.Surface) + len(r.ref.Pattern) + len(r.ref.File) + len(r.reason))
	position := func() {
		writeAll(&b, "rule ", strconv.Itoa(r.ref.Index+1), " of ", strconv.Itoa(total))
	}
	switch r.layer {
	case layerDefault:
		writeAll(&b, "the default rule → ", string(r.ref.Action))
		switch {
		case r.ref.Origin == OriginBuiltin:
			b.WriteString(` (built in: no scope sets "*")`)
		case r.mapFallback:
			writeAll(&b, ` (built in: "*" in `, scopeNames[r.ref.Origin], " ", printable(r.ref.File),
				` is a pattern map, which sets no state, though pi reports its scope as the origin)`)
		default:
			writeAll(&b, ` (the universal "*" of `, scopeNames[r.ref.Origin], " ", printable(r.ref.File), ")")
		}
	case layerBaseline:
		b.WriteString("the built-in MCP baseline rule mcp ")
		writeQuoted(&b, r.ref.Pattern)
		b.WriteString(" → allow (present because a config rule allows mcp; ")
		position()
		b.WriteString(")")
	default:
		writeAll(&b, "the rule ", printable(r.ref.Surface), " ")
		writeQuoted(&b, r.ref.Pattern)
		writeAll(&b, " → ", string(r.ref.Action))
		if r.reason != "" {
			b.WriteString(" (reason ")
			writeQuoted(&b, r.reason)
			b.WriteString(")")
		}
		writeAll(&b, " from ", scopeNames[r.ref.Origin], " ", printable(r.ref.File), " (")
		position()
		b.WriteString(")")
	}
	return b.String()
}
