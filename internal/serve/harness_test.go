package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

const (
	rootID = "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b"
)

// fakeJudge decides by the first matchValue; whole-session grants whose
// pattern equals it allow with origin session. Requests without facts get
// ask, unless rogue is set (to prove the server floors them itself).
type fakeJudge struct {
	mu    sync.Mutex
	rules map[string]resolve.Verdict
	rogue bool
}

func (j *fakeJudge) Resolve(req *wire.Request, grants []wire.Grant) resolve.Verdict {
	j.mu.Lock()
	defer j.mu.Unlock()
	ai := req.AccessIntent
	if ai == nil {
		if j.rogue {
			return ruleVerdict(resolve.Allow, "", "*", "global", "")
		}
		return resolve.Verdict{Action: resolve.Ask}
	}
	value := ai.MatchValues[0]
	for _, g := range grants {
		fam, _ := resolve.Family(ai.Surface)
		if (g.Surface == ai.Surface || g.Surface == fam) && grantMatches(g.Pattern, value) {
			return ruleVerdict(resolve.Allow, ai.Surface, g.Pattern, "session", "")
		}
	}
	if v, ok := j.rules[value]; ok {
		v.Surface = ai.Surface
		return v
	}
	return resolve.Verdict{Action: resolve.Ask, Surface: ai.Surface}
}

// Covers is the real matcher's, as serve's session denies use it.
func (j *fakeJudge) Covers(req *wire.Request, g wire.Grant) bool {
	return (&resolve.Policy{}).Covers(req, g)
}

// grantMatches is exact, or "cmd *" matching cmd and cmd with arguments.
func grantMatches(pattern, value string) bool {
	if prefix, ok := strings.CutSuffix(pattern, " *"); ok {
		return value == prefix || strings.HasPrefix(value, prefix+" ")
	}
	return pattern == value
}

func (j *fakeJudge) set(value string, v resolve.Verdict) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.rules == nil {
		j.rules = map[string]resolve.Verdict{}
	}
	j.rules[value] = v
}

func ruleVerdict(action resolve.Action, surface, pattern, origin, reason string) resolve.Verdict {
	p := pattern
	return resolve.Verdict{
		Action: action, Surface: surface, Pattern: &p, Origin: origin, Reason: reason,
		Rule: &resolve.RuleRef{Surface: surface, Pattern: pattern, Action: action, Origin: origin},
	}
}

// fakeGrants is an in-memory GrantStore.
type fakeGrants struct {
	mu     sync.Mutex
	grants map[string][]wire.Grant
}

func (g *fakeGrants) For(session string) []wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]wire.Grant(nil), g.grants[session]...)
}

func (g *fakeGrants) Add(session string, grants []wire.Grant) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.grants == nil {
		g.grants = map[string][]wire.Grant{}
	}
	g.grants[session] = append(g.grants[session], grants...)
	return nil
}

func (g *fakeGrants) Revoke(session string, grant wire.Grant) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	kept := g.grants[session][:0]
	found := false
	for _, x := range g.grants[session] {
		if x == grant {
			found = true
			continue
		}
		kept = append(kept, x)
	}
	if !found {
		return errors.New("no such grant")
	}
	g.grants[session] = kept
	return nil
}

func (g *fakeGrants) All() map[string][]wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	all := map[string][]wire.Grant{}
	for s, gs := range g.grants {
		all[s] = append([]wire.Grant(nil), gs...)
	}
	return all
}

// recorder collects events and lets a test wait for one.
type recorder = testkit.Recorder[Event]

type harness struct {
	t      *testing.T
	s      *Server
	layout wire.Layout
	state  string
	judge  *fakeJudge
	grants *fakeGrants
	rec    *recorder
	stop   context.CancelFunc
	done   chan error
}

type options struct {
	before func(h *harness) // runs before Run: files present at the first scan
	config func(c *Config)
	reuse  *harness // serve the inbox and state dir of an earlier server (a restart)
}

func startServer(t *testing.T, o options) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{
		t:      t,
		layout: wire.Layout{Root: filepath.Join(dir, "agent", "sessions", "permission-forwarding")},
		state:  filepath.Join(dir, "state", "permtui"),
		judge:  &fakeJudge{},
		grants: &fakeGrants{},
		rec:    testkit.NewRecorder[Event](),
	}
	cfg := Config{
		Layout: h.layout, Sessions: []string{rootID}, StateDir: h.state,
		Judge: func() Judge { return h.judge }, Grants: h.grants,
	}
	cfg.Inbox.Rescan = 50 * time.Millisecond
	cfg.Inbox.HeartbeatInterval = 50 * time.Millisecond
	if o.reuse != nil {
		h.layout, h.state = o.reuse.layout, o.reuse.state
		cfg.Layout, cfg.StateDir = h.layout, h.state
	}
	if o.config != nil {
		o.config(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	if o.before != nil {
		o.before(h)
	}
	go func() {
		for ev := range s.Events() {
			h.rec.Add(ev)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.done = cancel, make(chan error, 1)
	go func() { h.done <- s.Run(ctx) }()
	t.Cleanup(h.shutdown)
	return h
}

func (h *harness) shutdown() {
	h.stop()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	h.done <- nil
}

// intent builds a request with facts, as a newest child writes it.
func intent(id, agent, surface, value string, grants ...wire.Grant) *wire.Request {
	r := &wire.Request{
		ID: id, CreatedAt: 1791279012345, RequesterSessionID: "child-" + agent, TargetSessionID: rootID,
		RequesterAgentName: agent, Source: wire.SourceToolCall, Surface: ptr("bash"), Value: ptr(value),
		AccessIntent: &wire.AccessIntent{
			Surface: surface, MatchValues: []string{value}, RequesterCwd: "/w",
			Principal: wire.Principal{SessionID: "child-" + agent, AgentName: agent},
		},
	}
	if len(grants) > 0 {
		r.SessionApproval = &wire.SessionApproval{Grants: grants}
	}
	return r
}

func ptr(s string) *string { return &s }

// send writes a request file exactly as a child does.
func (h *harness) send(req *wire.Request) string {
	h.t.Helper()
	data, err := wire.MarshalRequest(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.sendRaw(req.ID, data)
}

func (h *harness) sendRaw(id string, data []byte) string {
	h.t.Helper()
	for _, dir := range []string{h.layout.RequestsDir(rootID), h.layout.ResponsesDir(rootID)} {
		if err := safefs.MkdirPrivate(dir); err != nil {
			h.t.Fatal(err)
		}
	}
	path := h.layout.RequestPath(rootID, id)
	if err := safefs.WriteFileAtomic(path, data); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// await polls for the response as a child does, reads it once, and removes
// the response and the request.
func (h *harness) await(id string) *wire.ChildResponse {
	h.t.Helper()
	path := h.layout.ResponsePath(rootID, id)
	deadline := time.Now().Add(testkit.WaitLimit)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			resp, rerr := wire.ReadResponseAsChild(data)
			_ = os.Remove(path)
			_ = os.Remove(h.layout.RequestPath(rootID, id))
			if rerr != nil {
				h.t.Fatalf("unreadable response %s: %v", data, rerr)
			}
			return resp
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no response for %s; events %#v", id, h.rec.Snapshot())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) queued(id string) Ask {
	h.t.Helper()
	return h.rec.WaitFor(h.t, "queued "+id, func(ev Event) bool {
		q, ok := ev.(AskQueued)
		return ok && q.Ask.Request.ID == id
	}).(AskQueued).Ask
}

func (h *harness) decided(id string) Decided {
	h.t.Helper()
	return h.rec.WaitFor(h.t, "decided "+id, func(ev Event) bool {
		d, ok := ev.(Decided)
		return ok && d.Ask.Request.ID == id
	}).(Decided)
}

// auditLines reads the audit log, one generic JSON object per line.
func (h *harness) auditLines() []map[string]any {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.state, "audit.jsonl"))
	if errors.Is(err, os.ErrNotExist) || len(data) == 0 {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	var recs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			h.t.Fatalf("audit line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// auditFor returns the decision records of a request (delivery lines
// carry a kind and are not decisions).
func (h *harness) auditFor(id string) []map[string]any {
	var out []map[string]any
	for _, r := range h.auditLines() {
		if r["requestId"] == id && r["kind"] == nil {
			out = append(out, r)
		}
	}
	return out
}

// deliveriesFor returns the delivery records of a request.
func (h *harness) deliveriesFor(id string) []map[string]any {
	var out []map[string]any
	for _, r := range h.auditLines() {
		if r["requestId"] == id && r["kind"] == "delivered" {
			out = append(out, r)
		}
	}
	return out
}
