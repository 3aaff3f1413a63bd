package pichild

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/permtui/permtui/internal/wire"
)

// The builders make requests shaped like the §10 examples. They mint the id
// with this process's pid and stamp createdAt now. Paths are not resolved
// against the filesystem: the absolute path stands in for the canonical one.

func base(target, agent, requesterSession string) *wire.Request {
	now := time.Now()
	return &wire.Request{
		ID:                 NewRequestID(now, os.Getpid()),
		CreatedAt:          float64(now.UnixMilli()),
		RequesterSessionID: requesterSession,
		TargetSessionID:    target,
		RequesterAgentName: agent,
		Source:             wire.SourceToolCall,
	}
}

// bashPattern is the session suggestion a child offers for a command: its
// first two words followed by " *" (pi's arity tables, simplified).
func bashPattern(command string) string {
	words := strings.Fields(command)
	if len(words) > 2 {
		words = words[:2]
	}
	return strings.Join(words, " ") + " *"
}

// LegacyBash is a 20.7.3 bash ask: message, display fields and the legacy
// {surface, patterns} suggestion; no payload and no accessIntent.
func LegacyBash(target, agent, requesterSession, command string) *wire.Request {
	r := base(target, agent, requesterSession)
	r.Message = new("Agent '" + agent + "' wants to run bash command: " + command)
	r.Surface, r.Value = new("bash"), new(command)
	r.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{{Surface: "bash", Pattern: bashPattern(command)}}, Legacy: true}
	return r
}

// newest fills the parts every newest ask shares: payload, display fields,
// one grant suggestion and the access intent.
func newest(target, agent, requesterSession, cwd, payloadKind, gateSurface, toolName, displayValue string,
	matchValues []string, boundary *string, grant wire.Grant) *wire.Request {
	r := base(target, agent, requesterSession)
	r.Payload = &wire.Payload{
		Kind: payloadKind,
		Request: wire.PayloadRequest{
			Requester:      wire.PayloadRequester{AgentName: new(agent)},
			Surface:        gateSurface,
			ToolName:       new(toolName),
			Value:          displayValue,
			MatchedPattern: new("*"),
		},
		Evidence:    []wire.Evidence{},
		Annotations: []wire.Annotation{},
	}
	r.Surface, r.Value = new(toolName), new(displayValue)
	r.SessionApproval = &wire.SessionApproval{Grants: []wire.Grant{grant}}
	r.AccessIntent = &wire.AccessIntent{
		Surface:       gateSurface,
		MatchValues:   matchValues,
		BoundaryValue: boundary,
		RequesterCwd:  cwd,
		Principal:     wire.Principal{SessionID: requesterSession, AgentName: agent},
	}
	return r
}

// NewestBash is a newest bash ask for one command. Set AccessIntent.Floor
// and AskingUnits on the result for a chain.
func NewestBash(target, agent, requesterSession, cwd, command string) *wire.Request {
	return newest(target, agent, requesterSession, cwd, "bash", "bash", "bash", command,
		[]string{command}, nil, wire.Grant{Surface: "bash", Pattern: bashPattern(command)})
}

// NewestPath is a newest path ask on a gate surface such as path_write or
// external_directory_read. matchValues holds the absolute path and, inside
// cwd, its relative alias; the suggestion is the parent directory + "/*".
func NewestPath(target, agent, requesterSession, cwd, surface, absPath string) *wire.Request {
	matchValues, display := []string{absPath}, absPath
	if rel, err := filepath.Rel(cwd, absPath); err == nil && filepath.IsLocal(rel) && rel != "." {
		matchValues = append(matchValues, rel)
		display = rel
	}
	kind, tool := "path", "read"
	if strings.HasPrefix(surface, "external_directory") {
		kind = "external_directory"
	}
	if strings.HasSuffix(surface, "_write") {
		tool = "write"
	}
	r := newest(target, agent, requesterSession, cwd, kind, surface, tool, display,
		matchValues, new(absPath), wire.Grant{Surface: surface, Pattern: filepath.Dir(absPath) + "/*"})
	if kind == "external_directory" {
		r.Payload.Evidence = []wire.Evidence{
			{Label: "resolves to", Text: absPath},
			{Label: "working directory", Text: cwd},
		}
	}
	return r
}

// NewestSkill is a newest skill ask (source skill_input).
func NewestSkill(target, agent, requesterSession, cwd, skill string) *wire.Request {
	r := newest(target, agent, requesterSession, cwd, "skill", "skill", "skill", skill,
		[]string{skill}, nil, wire.Grant{Surface: "skill", Pattern: skill})
	r.Source = wire.SourceSkillInput
	return r
}

// NewestMCP is a newest MCP ask for a "server:tool" target; the suggestion
// covers the whole server.
func NewestMCP(target, agent, requesterSession, cwd, mcpTarget string) *wire.Request {
	server, _, _ := strings.Cut(mcpTarget, ":")
	return newest(target, agent, requesterSession, cwd, "mcp", "mcp", "mcp", mcpTarget,
		[]string{mcpTarget}, nil, wire.Grant{Surface: "mcp", Pattern: server + ":*"})
}
