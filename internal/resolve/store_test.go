package resolve

import (
	"context"
	"sync"
	"testing"
	"time"
)

// waitFor returns the first reloaded policy that satisfies ok; the generous
// deadline only keeps a broken watcher from hanging the test run.
func waitFor(t *testing.T, reloads <-chan *Policy, ok func(*Policy) bool) *Policy {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case p := <-reloads:
			if ok(p) {
				return p
			}
		case <-deadline:
			t.Fatal("no matching reload")
			return nil
		}
	}
}

func TestStoreHotReload(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	s := NewStore(f.opts)
	before := s.Policy()
	q := Query{Agent: "rev", Surface: "bash", Values: []string{"ls"}}
	if v := before.Evaluate(q, nil); v.Action != Ask {
		t.Fatalf("initial verdict %s", v.Action)
	}

	ctx, cancel := context.WithCancel(context.Background())
	reloads := make(chan *Policy, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.Watch(ctx, func(p *Policy) { reloads <- p }); err != nil {
			t.Error(err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	// A new file in a directory that did not exist yet (the project scope).
	f.project(`{"permission":{"bash":{"ls":"allow"}}}`)
	p := waitFor(t, reloads, func(p *Policy) bool { return p.Evaluate(q, nil).Action == Allow })
	if s.Policy() != p {
		t.Error("the store does not hand out the reloaded policy")
	}
	if v := before.Evaluate(q, nil); v.Action != Ask {
		t.Error("an old snapshot changed under its holder")
	}

	// A new agent file.
	f.agent("rev", "---\npermission:\n  bash: deny\n---\n")
	waitFor(t, reloads, func(p *Policy) bool { return p.Evaluate(q, nil).Action == Deny })

	// An invalid project file becomes a problem, with the floor; no crash.
	f.project(`{"permission":{"bash":"sometimes"}}`)
	p = waitFor(t, reloads, func(p *Policy) bool { return len(p.Problems()) == 1 })
	if !p.Problems()[0].FailClosed {
		t.Errorf("problem = %+v, want fail-closed", p.Problems()[0])
	}

	// Fixing it clears the problem.
	f.project(`{"permission":{}}`)
	waitFor(t, reloads, func(p *Policy) bool { return len(p.Problems()) == 0 })
}

func TestStoreReload(t *testing.T) {
	f := newFixture(t)
	s := NewStore(f.opts)
	if v := s.Policy().Evaluate(Query{Surface: "x"}, nil); v.Action != Ask {
		t.Fatal(v.Action)
	}
	f.global(`{"permission":{"*":"deny"}}`)
	if v := s.Reload().Evaluate(Query{Surface: "x"}, nil); v.Action != Deny || s.Policy().Evaluate(Query{Surface: "x"}, nil).Action != Deny {
		t.Errorf("after Reload: %s", v.Action)
	}
}
