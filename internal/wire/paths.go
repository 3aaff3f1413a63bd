package wire

import (
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// EncodeSegment encodes one path segment exactly like JavaScript's
// encodeURIComponent: UTF-8 bytes as %XX (uppercase hex), except the
// unreserved characters A-Z a-z 0-9 - _ . ! ~ * ' ( ).
//
// JavaScript throws on a lone surrogate; Go strings have no surrogates but may
// hold invalid UTF-8. Each invalid byte is encoded as its own %XX, so the
// result is still one safe segment and distinct inputs stay distinct.
func EncodeSegment(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if strings.IndexByte(unreserved, c) >= 0 {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			size = 1 // invalid byte: encode it alone
		}
		for j := i; j < i+size; j++ {
			b.WriteByte('%')
			b.WriteByte(upperHex[s[j]>>4])
			b.WriteByte(upperHex[s[j]&0x0f])
		}
		i += size
	}
	return b.String()
}

const (
	upperHex     = "0123456789ABCDEF"
	alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	unreserved   = alphanumeric + "-_.!~*'()"
)

// AgentDir resolves pi's agent directory like getAgentDir: a non-empty
// PI_CODING_AGENT_DIR with "~" and a leading "~/" expanded, else
// <home>/.pi/agent.
func AgentDir(getenv func(string) string, home string) string {
	dir := getenv("PI_CODING_AGENT_DIR")
	switch {
	case dir == "":
		return filepath.Join(home, ".pi", "agent")
	case dir == "~":
		return home
	case strings.HasPrefix(dir, "~/"):
		return filepath.Join(home, dir[2:])
	}
	return dir
}

// Layout computes inbox paths under the forwarding root. Session ids passed
// to it must already be normalized (NormalizeSessionID) and request ids
// validated (ValidID); it does no checking of its own.
type Layout struct {
	Root string // <agentDir>/sessions/permission-forwarding
}

// NewLayout returns the layout of the forwarding root under agentDir.
func NewLayout(agentDir string) Layout {
	return Layout{Root: filepath.Join(agentDir, "sessions", "permission-forwarding")}
}

// SessionsDir is <root>/sessions.
func (l Layout) SessionsDir() string { return filepath.Join(l.Root, "sessions") }

// SessionDir is the session root <root>/sessions/<enc(id)>.
func (l Layout) SessionDir(sessionID string) string {
	return filepath.Join(l.SessionsDir(), EncodeSegment(sessionID))
}

// RequestsDir is the session's requests/ directory.
func (l Layout) RequestsDir(sessionID string) string {
	return filepath.Join(l.SessionDir(sessionID), "requests")
}

// ResponsesDir is the session's responses/ directory.
func (l Layout) ResponsesDir(sessionID string) string {
	return filepath.Join(l.SessionDir(sessionID), "responses")
}

// RequestPath is requests/<id>.json; the id is used raw, as pi does.
func (l Layout) RequestPath(sessionID, requestID string) string {
	return filepath.Join(l.RequestsDir(sessionID), requestID+".json")
}

// ResponsePath is responses/<id>.json; the id is used raw, as pi does.
func (l Layout) ResponsePath(sessionID, requestID string) string {
	return filepath.Join(l.ResponsesDir(sessionID), requestID+".json")
}

// ServingDir is <root>/serving, beside sessions/.
func (l Layout) ServingDir() string { return filepath.Join(l.Root, "serving") }

// HeartbeatPath is serving/<enc(id)>.json.
func (l Layout) HeartbeatPath(sessionID string) string {
	return filepath.Join(l.ServingDir(), EncodeSegment(sessionID)+".json")
}
