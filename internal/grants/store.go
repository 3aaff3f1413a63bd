// Package grants stores the whole-session grants of every served session
// (decision 0023): one 0600 file per session under permtui's state
// directory, loaded at start and saved before a change takes effect. Judging
// with grants is resolve's job; this package only keeps them.
package grants

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// Store holds the whole-session grants (ADR 0006 "the whole session") of
// every served session, persisted as <dir>/<enc(session)>.json so they
// outlive a permtui restart. Safe for concurrent use.
type Store struct {
	dir string
	mu  sync.Mutex
	by  map[string][]wire.Grant
}

const (
	fileSuffix = ".json"
	// maxFileSize caps one session's grants file, as policy files are capped.
	maxFileSize = 1 << 20
)

// Open loads every grants file of dir, creating dir (0700) if needed.
// A corrupt file is an error naming it, never silently dropped.
func Open(dir string) (*Store, error) {
	if err := safefs.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("grants directory %s: %w", dir, err)
	}
	g := &Store{dir: dir, by: map[string][]wire.Grant{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("grants directory %s: %w", dir, err)
	}
	for _, e := range entries {
		session, ok := sessionOf(e.Name())
		if !ok {
			continue // temp files of atomic writes, or not ours
		}
		file := filepath.Join(dir, e.Name())
		data, err := safefs.ReadRegularFile(file, maxFileSize)
		if err != nil {
			return nil, fmt.Errorf("grants file %s: %w", file, err)
		}
		var list []wire.Grant
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("grants file %s is corrupt: %w", file, err)
		}
		if len(list) > 0 {
			g.by[session] = list
		}
	}
	return g, nil
}

// sessionOf decodes a grants file name back to its session id; names
// that are not the canonical encoding of an id are not grants files.
func sessionOf(name string) (string, bool) {
	stem, ok := strings.CutSuffix(name, fileSuffix)
	if !ok {
		return "", false
	}
	session, err := url.PathUnescape(stem)
	if err != nil || session == "" || wire.EncodeSegment(session) != stem {
		return "", false
	}
	return session, true
}

func (g *Store) file(session string) string {
	return filepath.Join(g.dir, wire.EncodeSegment(session)+fileSuffix)
}

// For returns a copy of the session's grants in recorded order.
func (g *Store) For(session string) []wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.by[session])
}

// All returns a copy of every session's grants.
func (g *Store) All() map[string][]wire.Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	all := make(map[string][]wire.Grant, len(g.by))
	for s, list := range g.by {
		all[s] = slices.Clone(list)
	}
	return all
}

// Add records grants for the session, skipping ones already recorded, and
// persists them before returning. On a write failure nothing is recorded.
func (g *Store) Add(session string, grants []wire.Grant) error {
	if session == "" {
		return errors.New("grants: empty session id")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	list := slices.Clone(g.by[session])
	for _, gr := range grants {
		if !slices.Contains(list, gr) {
			list = append(list, gr)
		}
	}
	if len(list) == len(g.by[session]) {
		return nil
	}
	return g.save(session, list)
}

// Revoke removes one grant of the session and persists the change.
func (g *Store) Revoke(session string, grant wire.Grant) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	list := slices.Clone(g.by[session])
	i := slices.Index(list, grant)
	if i < 0 {
		return nil
	}
	return g.save(session, slices.Delete(list, i, i+1))
}

// save writes the list atomically, then makes it current. Called with mu held.
func (g *Store) save(session string, list []wire.Grant) error {
	if list == nil {
		list = []wire.Grant{}
	}
	data, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if len(data) > maxFileSize {
		return fmt.Errorf("grants: session %q would exceed %d bytes of grants", session, maxFileSize)
	}
	if err := safefs.WriteFileAtomic(g.file(session), data); err != nil {
		return err
	}
	if len(list) == 0 {
		delete(g.by, session)
	} else {
		g.by[session] = list
	}
	return nil
}
