package resolve

import "testing"

// A surface is known when it is built in or a rule of any view names it
// plainly (the shared configs or an agent's file); the nearest known one is
// offered for a typo.
func TestKnownAndNearestSurface(t *testing.T) {
	f := newFixture(t)
	f.global(`{"permission":{"task":"ask","mcp__*":"allow"}}`)
	f.agent("scout", "---\npermission:\n  deploy: deny\n---\n")
	p := Load(f.opts)
	for surface, known := range map[string]bool{"bash": true, "task": true, "deploy": true, "mcp__*": false, "mcp__x": false, "nope": false} {
		if got := p.KnownSurface(surface); got != known {
			t.Errorf("KnownSurface(%q) = %v, want %v", surface, got, known)
		}
	}
	for typo, want := range map[string]string{"deploi": "deploy", "tsak": "task", "bsh": "bash", "zzzzzz": ""} {
		if got := p.NearestSurface(typo); got != want {
			t.Errorf("NearestSurface(%q) = %q, want %q", typo, got, want)
		}
	}
}
