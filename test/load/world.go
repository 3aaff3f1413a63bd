package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// policy allows the one command the simulated children ask about, so every
// request is answered automatically.
const policy = `{"permission": {"*": "ask", "bash": {"*": "ask", "ls": "allow"}}}`

// world is a throw-away agent dir with n root sessions whose inboxes exist.
type world struct {
	base     string
	agentDir string
	stateDir string
	layout   wire.Layout
	sessions []string
}

func newWorld(parent string, n int) (*world, error) {
	base, err := os.MkdirTemp(parent, "permtui-load-")
	if err != nil {
		return nil, err
	}
	w := &world{
		base:     base,
		agentDir: filepath.Join(base, "agent"),
		stateDir: filepath.Join(base, "state"),
	}
	w.layout = wire.NewLayout(w.agentDir)
	cfg := w.configFile()
	for _, d := range []string{filepath.Dir(cfg), w.stateDir} {
		if err := safefs.MkdirPrivate(d); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(cfg, []byte(policy), 0o600); err != nil {
		return nil, err
	}
	for i := range n {
		id := fmt.Sprintf("0198c3a4-5b6d-7e8f-9a0b-%012d", i)
		for _, d := range []string{w.layout.RequestsDir(id), w.layout.ResponsesDir(id)} {
			if err := safefs.MkdirPrivate(d); err != nil {
				return nil, err
			}
		}
		w.sessions = append(w.sessions, id)
	}
	return w, nil
}

func (w *world) remove() { _ = os.RemoveAll(w.base) }

// configFile is the root's policy file, where pi keeps it.
func (w *world) configFile() string {
	return filepath.Join(w.agentDir, "extensions", "pi-permission-system", "config.json")
}

// childCwd is where the simulated children ask from, the root sessions'
// project: an ask from outside the project is held (decision 0234).
const childCwd = "/w"

// idMark stands for the request id in a request template.
const idMark = "IDMARK"

// requestTemplate is a canonical request a child would write for `ls` in
// session, with idMark where the id goes: marshalled once, so the
// generator spends its CPU on the filesystem, as a child does. It carries
// every field pi 20.7.3's node requires (message included), so pi's own
// node reads it too.
func requestTemplate(session string) ([]byte, error) { return bashTemplate(session, "ls") }

// bashTemplate is the request template for running command in session.
func bashTemplate(session, command string) ([]byte, error) {
	return wire.MarshalRequest(&wire.Request{
		ID: idMark, CreatedAt: 1791279012345, RequesterSessionID: "child-session",
		TargetSessionID: session, RequesterAgentName: "worker", Message: new(""), Source: wire.SourceToolCall,
		Surface: new("bash"), Value: new(command),
		AccessIntent: &wire.AccessIntent{
			Surface: "bash", MatchValues: []string{command}, RequesterCwd: childCwd,
			Principal: wire.Principal{SessionID: "child-session", AgentName: "worker"},
		},
	})
}

func fill(template []byte, id string) []byte {
	return bytes.Replace(template, []byte(idMark), []byte(id), 1)
}

// requestID is unique within one run and has pi's shape
// (<ms>-<base36>-<pid>).
func requestID(run int64, n uint64) string {
	return strconv.FormatInt(run, 10) + "-" + strconv.FormatUint(n, 36) + "-" + strconv.Itoa(os.Getpid())
}
