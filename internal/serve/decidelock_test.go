package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// gatedJudge is a real policy whose next DeniesPassed, once armed, waits
// for release: a scope choice's judgment held halfway.
type gatedJudge struct {
	*resolve.Policy
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedJudge) DeniesPassed(gr wire.Grant) []resolve.PassedDeny {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Policy.DeniesPassed(gr)
}

// within fails the test unless ch yields within the wait limit.
func within(t *testing.T, what string, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(testkit.WaitLimit):
		t.Fatal(what)
		return nil
	}
}

// A scope choice is judged under the policy (its reach: milliseconds on a
// 10,000-rule policy) outside serve's lock, so another ask is decided and
// a reload is taken meanwhile; a choice whose reach that reload changed is
// refused, and the ask stays for the person (decision 0277).
func TestAScopeChoiceIsJudgedOutsideServesLock(t *testing.T) {
	agentDir := t.TempDir()
	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask"}}}`))
	var mu sync.Mutex
	held := &gatedJudge{Policy: resolve.Load(resolve.LoadOptions{AgentDir: agentDir}), entered: make(chan struct{}), release: make(chan struct{})}
	judge := held
	h := startServer(t, options{config: func(c *Config) {
		c.Judge = func() Judge { mu.Lock(); defer mu.Unlock(); return judge }
	}})
	var once sync.Once
	release := func() { once.Do(func() { close(held.release) }) }
	t.Cleanup(release) // before the server's shutdown, should the test fail holding it
	isQueued := func(ev Event) bool { _, ok := ev.(AskQueued); return ok }
	h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c1", "/w", "npm test --watch"))
	first := h.rec.WaitFor(t, "the first ask", isQueued).(AskQueued).Ask
	h.ask(context.Background(), h.child(true), pichild.NewestBash(rootID, "impl", "c2", "/w", "ls"))
	other := h.rec.WaitFor(t, "the second ask", func(ev Event) bool { return isQueued(ev) && ev.(AskQueued).Ask.ID != first.ID }).(AskQueued).Ask.ID

	held.armed.Store(true)
	chose := make(chan error, 1)
	go func() {
		chose <- h.s.Decide(Decision{Ask: first.ID, Scope: ScopeSubagent, ScopesRev: first.Scopes.Rev})
	}()
	select {
	case <-held.entered:
	case <-time.After(testkit.WaitLimit):
		t.Fatal("the choice was never judged")
	}
	approved := make(chan error, 1)
	go func() { approved <- h.s.Decide(Decision{Ask: other, State: wire.StateApproved}) }()
	if err := within(t, "another ask waited for the scope choice's judgment", approved); err != nil {
		t.Fatal(err)
	}

	testkit.WriteFile(t, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"bash":{"*":"ask","npm test --force*":"deny"}}}`))
	mu.Lock()
	judge = &gatedJudge{Policy: resolve.Load(resolve.LoadOptions{AgentDir: agentDir})}
	mu.Unlock()
	reloaded := make(chan error, 1)
	go func() { h.s.PolicyLoaded(PolicyStatus{}); reloaded <- nil }()
	_ = within(t, "the reload waited for the scope choice's judgment", reloaded)
	changed := h.rec.WaitFor(t, "scopes judged again", func(ev Event) bool { _, ok := ev.(ScopesChanged); return ok }).(ScopesChanged)
	release()
	if err := within(t, "the choice was not answered", chose); !errors.Is(err, ErrInvalidDecision) {
		t.Fatalf("a choice judged across a reload that changed its reach: err = %v", err)
	}
	if err := h.s.Decide(Decision{Ask: first.ID, Scope: ScopeSubagent, ScopesRev: changed.Scopes.Rev}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkScopeChoiceJudgment is what Decide judges of a whole-session
// choice with an edit, outside serve's lock since decision 0277: the
// offered scopes' reach and the edit's, on policies of n path rules, a
// quarter of them denies the grant passes (every one is walked).
func BenchmarkScopeChoiceJudgment(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		rules := []string{`"*":"ask"`}
		for i := 1; i < n; i++ {
			rule := fmt.Sprintf(`"/home/u/proj%d/src/*":"allow"`, i)
			if i%4 == 1 {
				rule = fmt.Sprintf(`"*.secret%d":"deny"`, i)
			}
			rules = append(rules, rule)
		}
		agentDir := b.TempDir()
		testkit.WriteFile(b, resolve.GlobalConfigPath(agentDir), []byte(`{"permission":{"path":{`+strings.Join(rules, ",")+`}}}`))
		p := resolve.Load(resolve.LoadOptions{AgentDir: agentDir, Home: "/home/u"})
		req := pichild.NewestPath(rootID, "impl", "c1", "/home/u/work/app", "path_write", "/home/u/work/app/src/main.go")
		edit := []wire.Grant{{Surface: "path_write", Pattern: "/home/u/work/app/src/*"}}
		d := Decision{Scope: ScopeSession, Grants: edit, EditDenies: ShownDenies(EditedReach(req, ScopeSession, edit, p))}
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			if j := judgeChoice(req, d, p); !j.offered || j.edit != nil || len(d.EditDenies) != (n+2)/4 {
				b.Fatalf("judged %+v with %d denies shown", j, len(d.EditDenies))
			}
			for b.Loop() {
				judgeChoice(req, d, p)
			}
		})
	}
}
