// Package demo is permtui's embedded demo: a throw-away pi agent dir with a
// sample root policy, and simulated pi children that forward real request
// files and read the answers as pi does.
package demo

import (
	"fmt"
	"path/filepath"

	"github.com/permtui/permtui/internal/safefs"
)

// Env is a demo world laid out under one temporary directory.
type Env struct {
	Root     string   // everything lives below it
	AgentDir string   // the root's pi agent dir (config and agent files)
	Project  string   // the root session's working directory
	StateDir string   // permtui's audit log, grants and log
	Sessions []string // the two root sessions permtui serves
	// Worktrees are the children's working directories (other worktrees of the project).
	Worktrees []string
}

// The two root sessions: a main session and a review session.
const (
	MainSession   = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"
	ReviewSession = "0198c3a5-0c1d-7e2f-8a3b-4c5d6e7f8a9b"
)

// globalConfig is the root's pi-permission-system policy.
const globalConfig = `{
  // The root's policy: routine work is allowed, secrets and npm are not,
  // everything else asks a person.
  "permission": {
    "*": "ask",
    "bash": {
      "*": "ask",
      "git status": "allow",
      "git diff *": "allow",
      "git log *": "allow",
      "pnpm *": "allow",
      "npm *": { "action": "deny", "reason": "This repo uses pnpm; run pnpm instead." },
      "sudo *": { "action": "deny", "reason": "sudo is never allowed for subagents." }
    },
    "path": {
      "*": "ask",
      "*.env": { "action": "deny", "reason": "Secrets stay out of subagents." }
    },
    "skill": { "*": "ask", "pdf": "allow" },
    "mcp": { "*": "ask", "github:get_*": "allow" }
  }
}
`

// Agent files: the implementer may write its sources, the researcher may read
// docs but never fetch from the network.
const implementerAgent = `---
name: implementer
description: writes code in its own worktree
permission:
  path:
    "src/*": allow
---
Implements changes.
`

const researcherAgent = `---
name: researcher
permission:
  bash:
    "rg *": allow
    "curl *": deny
  path_read:
    "docs/*": allow
---
Reads and reports.
`

// Setup lays out a demo world under root, which must exist and be empty.
func Setup(root string) (Env, error) {
	env := Env{
		Root:     root,
		AgentDir: filepath.Join(root, "agent"),
		Project:  filepath.Join(root, "work", "app"),
		StateDir: filepath.Join(root, "state"),
		Sessions: []string{MainSession, ReviewSession},
		Worktrees: []string{
			filepath.Join(root, "work", "app-wt-42"),
			filepath.Join(root, "work", "app-wt-7"),
		},
	}
	files := map[string]string{
		filepath.Join(env.AgentDir, "extensions", "pi-permission-system", "config.json"): globalConfig,
		filepath.Join(env.AgentDir, "agents", "implementer.md"):                          implementerAgent,
		filepath.Join(env.AgentDir, "agents", "researcher.md"):                           researcherAgent,
		filepath.Join(env.Project, "README"):                                             "demo project\n",
	}
	for path, text := range files {
		if err := safefs.MkdirPrivate(filepath.Dir(path)); err != nil {
			return Env{}, err
		}
		if err := safefs.WriteFileAtomic(path, []byte(text)); err != nil {
			return Env{}, fmt.Errorf("demo files: %w", err)
		}
	}
	for _, dir := range append([]string{env.Project, env.StateDir}, env.Worktrees...) {
		if err := safefs.MkdirPrivate(dir); err != nil {
			return Env{}, err
		}
	}
	return env, nil
}
