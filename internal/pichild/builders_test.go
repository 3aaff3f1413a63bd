package pichild

import (
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/wire"
)

func TestNewRequestID(t *testing.T) {
	re := regexp.MustCompile(`^1791279012345-[0-9a-z]{1,8}-48211$`)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		id := NewRequestID(time.UnixMilli(1791279012345), 48211)
		if !re.MatchString(id) || !wire.ValidID(id) {
			t.Fatalf("id %q", id)
		}
		seen[id] = true
	}
	if len(seen) < 190 {
		t.Fatalf("only %d distinct ids in 200", len(seen))
	}
}

// Every builder's request survives the wire: the server reads back exactly
// what was built, with nothing dropped.
func TestBuildersParseBack(t *testing.T) {
	builders := map[string]*wire.Request{
		"legacy bash":       LegacyBash(served, "researcher", childSess, "npm install left-pad"),
		"newest bash":       NewestBash(served, "implementer", childSess, "/home/ana/w", "git push origin main"),
		"path write inside": NewestPath(served, "implementer", childSess, "/home/ana/w", "path_write", "/home/ana/w/src/config.ts"),
		"external read":     NewestPath(served, "implementer", childSess, "/home/ana/w", "external_directory_read", "/etc/hosts"),
		"skill":             NewestSkill(served, "implementer", childSess, "/home/ana/w", "deploy-prod"),
		"mcp":               NewestMCP(served, "implementer", childSess, "/home/ana/w", "exa:web_search_exa"),
	}
	for name, r := range builders {
		t.Run(name, func(t *testing.T) {
			data, err := wire.MarshalRequest(r)
			if err != nil {
				t.Fatal(err)
			}
			back, err := wire.ParseRequest(data)
			if err != nil || !back.RoutedTo(served) || len(back.Dropped) != 0 {
				t.Fatalf("%v routed=%v dropped=%v\n%s", err, err == nil && back.RoutedTo(served), back, data)
			}
			if !reflect.DeepEqual(back, r) {
				t.Fatalf("got %+v\nwant %+v", back, r)
			}
		})
	}
}

func TestBuilderShapes(t *testing.T) {
	legacy := LegacyBash(served, "researcher", childSess, "npm install left-pad")
	if legacy.AccessIntent != nil || legacy.Payload != nil || !legacy.SessionApproval.Legacy ||
		legacy.SessionApproval.Grants[0] != (wire.Grant{Surface: "bash", Pattern: "npm install *"}) || legacy.Message == nil {
		t.Fatalf("legacy %+v", legacy)
	}
	inside := NewestPath(served, "i", childSess, "/home/ana/w", "path_write", "/home/ana/w/src/config.ts")
	if !reflect.DeepEqual(inside.AccessIntent.MatchValues, []string{"/home/ana/w/src/config.ts", "src/config.ts"}) ||
		inside.SessionApproval.Grants[0] != (wire.Grant{Surface: "path_write", Pattern: "/home/ana/w/src/*"}) ||
		*inside.Value != "src/config.ts" || *inside.Surface != "write" || inside.Payload.Kind != "path" {
		t.Fatalf("inside %+v", inside)
	}
	outside := NewestPath(served, "i", childSess, "/home/ana/w", "external_directory_read", "/home/ana/wx/lib.rs")
	if !reflect.DeepEqual(outside.AccessIntent.MatchValues, []string{"/home/ana/wx/lib.rs"}) ||
		outside.Payload.Kind != "external_directory" || len(outside.Payload.Evidence) != 2 || *outside.Surface != "read" {
		t.Fatalf("outside %+v", outside)
	}
	if s := NewestSkill(served, "i", childSess, "/w", "deploy"); s.Source != wire.SourceSkillInput || s.AccessIntent.BoundaryValue != nil {
		t.Fatalf("skill %+v", s)
	}
	if m := NewestMCP(served, "i", childSess, "/w", "exa:search"); m.SessionApproval.Grants[0].Pattern != "exa:*" {
		t.Fatalf("mcp %+v", m)
	}
}
