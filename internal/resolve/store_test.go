package resolve

import (
	"context"
	"os"
	"path/filepath"
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
		s.Watch(ctx, func(p *Policy) { reloads <- p })
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

// startWatch starts s.Watch with the periodic rescan out of the way, so only
// fsnotify events can trigger a reload, and returns once the watches are in
// place: after the reload that a rewrite of the global config causes.
func startWatch(t *testing.T, f *fixture, s *Store) <-chan *Policy {
	t.Helper()
	s.Rescan = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	reloads := make(chan *Policy, 256)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Watch(ctx, func(p *Policy) {
			select {
			case reloads <- p:
			default: // the test reads only the latest state it waits for
			}
		})
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	f.global(`{"$schema":"ready","permission":{"bash":"ask"}}`)
	waitFor(t, reloads, func(*Policy) bool { return true })
	return reloads
}

// An agents directory deleted and recreated between two reloads is watched
// again: a file written into the new directory is picked up by its event.
func TestStoreWatchesARecreatedAgentsDirectory(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	f.agent("rev", "---\npermission:\n  bash: deny\n---\n")
	s := NewStore(f.opts)
	reloads := startWatch(t, f, s)
	dir := filepath.Join(f.opts.AgentDir, "agents")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	waitFor(t, reloads, func(p *Policy) bool { return len(p.Agents()) == 0 })
	f.agent("rev", "---\npermission:\n  bash: allow\n---\n")
	p := waitFor(t, reloads, func(p *Policy) bool { return len(p.Agents()) == 1 })
	if v := p.Evaluate(Query{Agent: "rev", Surface: "bash", Values: []string{"ls"}}, nil); v.Action != Allow {
		t.Errorf("rev bash = %s, want allow from the new file", v.Action)
	}
}

// A deleted agents directory drops its agents; nothing breaks.
func TestStoreSurvivesADeletedAgentsDirectory(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	f.agent("rev", "---\npermission:\n  bash: deny\n---\n")
	s := NewStore(f.opts)
	reloads := startWatch(t, f, s)
	if err := os.RemoveAll(filepath.Join(f.opts.AgentDir, "agents")); err != nil {
		t.Fatal(err)
	}
	p := waitFor(t, reloads, func(p *Policy) bool { return len(p.Agents()) == 0 })
	if v := p.Evaluate(Query{Agent: "rev", Surface: "bash", Values: []string{"ls"}}, nil); v.Action != Ask || len(p.Problems()) != 0 {
		t.Errorf("after deleting the agents dir: %s, problems %+v; want ask and no problem", v.Action, p.Problems())
	}
	f.agent("rev", "---\npermission:\n  bash: allow\n---\n")
	waitFor(t, reloads, func(p *Policy) bool {
		return p.Evaluate(Query{Agent: "rev", Surface: "bash", Values: []string{"ls"}}, nil).Action == Allow
	})
}

// A file flipping between valid and invalid faster than the debounce ends in
// the state of its last write, with no problem left over.
func TestStoreSettlesOnTheLastOfRapidFlips(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	s := NewStore(f.opts)
	reloads := startWatch(t, f, s)
	for i := range 40 {
		if i%2 == 0 {
			f.project(`{"permission":{"bash":"sometimes"}}`)
		} else {
			f.project(`{"permission":{"bash":{"ls":"allow"}}}`)
		}
	}
	f.project(`{"permission":{"bash":{"ls":"deny"}}}`)
	p := waitFor(t, reloads, func(p *Policy) bool {
		return len(p.Problems()) == 0 && p.Evaluate(Query{Surface: "bash", Values: []string{"ls"}}, nil).Action == Deny
	})
	if s.Policy() != p && s.Policy().Evaluate(Query{Surface: "bash", Values: []string{"ls"}}, nil).Action != Deny {
		t.Error("the store's current policy is not the settled one")
	}
}

// A change between the load and the start of Watch has no event to wake
// the watcher; Watch looks for one when it starts.
func TestStoreWatchSeesAChangeMadeBeforeItStarted(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"bash":"ask"}}`)
	s := NewStore(f.opts)
	f.project(`{"permission":{"bash":"deny"}}`)
	s.Rescan = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	reloads := make(chan *Policy, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Watch(ctx, func(p *Policy) { reloads <- p }) }()
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, reloads, func(p *Policy) bool {
		return p.Evaluate(Query{Surface: "bash", Values: []string{"ls"}}, nil).Action == Deny
	})
}
