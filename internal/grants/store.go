// Package grants stores the whole-session grants of every served session
// (decision 0023), and its session denies (decision 0104): 0600 files per
// session under permtui's state directory, loaded at start and saved before
// a change takes effect. Judging with them is resolve's job; this package
// only keeps them.
package grants

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// Store holds the whole-session grants (ADR 0006 "the whole session") of
// every served session, persisted as <dir>/<enc(session)>.json so they
// outlive a permtui restart. Several permtui processes may share the
// directory (decision 0056): a session's file is read again whenever it
// changed, and every change is a read-modify-write under an flock on the
// directory, written durably with a backup beside it. Safe for concurrent
// use.
type Store struct {
	dir     string
	mu      sync.Mutex
	grants  *lists[wire.Grant]
	denies  *lists[Deny]
	repairs []string // damaged files found and recovered, not yet reported
}

// Deny is a session deny (decision 0104): a person denied an ask for the
// whole root session, and every later ask of it that Grant's surface and
// pattern cover (as a grant would) is denied with Reason.
type Deny struct {
	wire.Grant
	Reason string `json:"reason"`
}

// lists are one kind of per-session list (grants or denies), each session's
// in its own <enc(session)><suffix> file.
type lists[T comparable] struct {
	store  *Store
	suffix string
	by     map[string][]T
	seen   map[string]os.FileInfo // the file each session's list was read from (nil: none)
}

const (
	// grantSuffix names a session's grants file; denySuffix its session
	// denies, beside it, so grants files written before denies existed
	// load unchanged.
	grantSuffix = ".json"
	denySuffix  = ".deny"
	// backupSuffix names the copy of the last good content kept beside each
	// file, for recovering one torn by a power loss.
	backupSuffix = ".bak"
	// maxFileSize caps one session's grants file, as policy files are capped.
	maxFileSize = 1 << 20
)

// Open loads every grants file of dir, creating dir (0700) if needed. A
// damaged file (empty or torn after a power loss) does not stop it: it is
// moved aside and its session's grants come from the backup, or are empty
// (narrower, never wider); Repairs reports each such recovery.
func Open(dir string) (*Store, error) {
	if err := safefs.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("grants directory %s: %w", dir, err)
	}
	g := &Store{dir: dir}
	g.grants = newLists[wire.Grant](g, grantSuffix)
	g.denies = newLists[Deny](g, denySuffix)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("grants directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := g.grants.open(e.Name()); err != nil {
			return nil, err
		}
		if err := g.denies.open(e.Name()); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func newLists[T comparable](g *Store, suffix string) *lists[T] {
	return &lists[T]{store: g, suffix: suffix, by: map[string][]T{}, seen: map[string]os.FileInfo{}}
}

// open loads the file of that name if it is one of these lists'.
func (l *lists[T]) open(name string) error {
	session, ok := sessionOf(name, l.suffix)
	if !ok {
		return nil // temp files of atomic writes, backups, or not ours
	}
	return l.load(session, true)
}

// Repairs returns (and forgets) what was recovered since the last call.
func (g *Store) Repairs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.repairs
	g.repairs = nil
	return r
}

// load reads the session's file (mu held, or during Open): with always, or
// when it changed since it was read (another permtui added or revoked a
// grant). A file that does not parse is moved aside and replaced by its
// backup, or by no grants; an error keeps nothing wider than the file says.
func (g *lists[T]) load(session string, always bool) error {
	file := g.file(session)
	fi, err := os.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		g.keep(session, nil, nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("grants file %s: %w", file, err)
	}
	if old := g.seen[session]; !always && old != nil && os.SameFile(fi, old) && fi.Size() == old.Size() && fi.ModTime().Equal(old.ModTime()) {
		return nil
	}
	list, err := readList[T](file)
	if err != nil {
		if list, err = g.recover(session, file, err); err != nil {
			return err
		}
		if fi, err = os.Stat(file); err != nil {
			return fmt.Errorf("grants file %s: %w", file, err)
		}
	}
	g.keep(session, list, fi)
	return nil
}

// keep holds list as the session's, read from or written to the file fi
// describes (nil: none, or unknown, so the next load reads it again).
func (g *lists[T]) keep(session string, list []T, fi os.FileInfo) {
	if len(list) > 0 {
		g.by[session] = list
	} else {
		delete(g.by, session)
	}
	g.seen[session] = fi
}

func readList[T any](file string) ([]T, error) {
	data, err := safefs.ReadRegularFile(file, maxFileSize)
	if err != nil {
		return nil, err
	}
	var list []T
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("corrupt: %w", err)
	}
	return list, nil
}

// recover handles a damaged grants file: it is kept as <file>.damaged-<ms>,
// and the backup (the last content written) takes its place, or an empty
// list when there is none. The audit log is not used: revocations are not
// in it, so it could bring back a revoked grant.
func (g *lists[T]) recover(session, file string, cause error) ([]T, error) {
	aside := fmt.Sprintf("%s.damaged-%d", file, time.Now().UnixMilli())
	if err := os.Rename(file, aside); err != nil {
		return nil, fmt.Errorf("grants file %s is damaged (%v) and cannot be moved aside: %w", file, cause, err)
	}
	list, berr := readList[T](file + backupSuffix)
	what := "restored from its backup"
	if berr != nil {
		list, what = nil, "no usable backup, so the session starts with no grants"
	}
	if err := g.write(session, list); err != nil {
		return nil, err
	}
	g.store.repairs = append(g.store.repairs, fmt.Sprintf("grants file %s was damaged (%v): kept as %s; %s", file, cause, aside, what))
	return list, nil
}

// sessionOf decodes a grants file name back to its session id; names
// that are not the canonical encoding of an id are not grants files.
func sessionOf(name, suffix string) (string, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok {
		return "", false
	}
	session, err := url.PathUnescape(stem)
	if err != nil || session == "" || wire.EncodeSegment(session) != stem {
		return "", false
	}
	return session, true
}

func (g *lists[T]) file(session string) string {
	return filepath.Join(g.store.dir, wire.EncodeSegment(session)+g.suffix)
}

// For returns a copy of the session's grants in recorded order, as the file
// says now. If the file cannot be read, no grants are in force.
func (g *Store) For(session string) []wire.Grant {
	list, _ := forSession(g, g.grants, session)
	return list
}

// All returns a copy of every session's grants, as last read.
func (g *Store) All() map[string][]wire.Grant { return all(g, g.grants) }

// Denies returns a copy of the session's denies in recorded order, as the
// file says now. An unreadable file is an error, so the caller can fail
// closed rather than judge as if nothing were denied.
func (g *Store) Denies(session string) ([]Deny, error) { return forSession(g, g.denies, session) }

// AllDenies returns a copy of every session's denies, as last read.
func (g *Store) AllDenies() map[string][]Deny { return all(g, g.denies) }

func forSession[T comparable](g *Store, l *lists[T], session string) ([]T, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := l.load(session, false); err != nil {
		return nil, err
	}
	return slices.Clone(l.by[session]), nil
}

func all[T comparable](g *Store, l *lists[T]) map[string][]T {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]T, len(l.by))
	for s, list := range l.by {
		out[s] = slices.Clone(list)
	}
	return out
}

// Add records grants for the session, skipping ones already recorded, and
// persists them before returning. On a write failure nothing is recorded.
func (g *Store) Add(session string, grants []wire.Grant) error {
	return change(g, g.grants, session, add(grants))
}

// Revoke removes one grant of the session and persists the change.
func (g *Store) Revoke(session string, grant wire.Grant) error {
	return change(g, g.grants, session, remove(grant))
}

// AddDeny records a session deny and persists it before returning; a deny
// already recorded with the same surface and pattern keeps its reason.
func (g *Store) AddDeny(session string, d Deny) error {
	return change(g, g.denies, session, func(list []Deny) []Deny {
		if slices.ContainsFunc(list, func(o Deny) bool { return o.Grant == d.Grant }) {
			return list
		}
		return append(list, d)
	})
}

// RevokeDeny removes one session deny and persists the change.
func (g *Store) RevokeDeny(session string, d Deny) error {
	return change(g, g.denies, session, remove(d))
}

func add[T comparable](items []T) func([]T) []T {
	return func(list []T) []T {
		for _, it := range items {
			if !slices.Contains(list, it) {
				list = append(list, it)
			}
		}
		return list
	}
}

func remove[T comparable](item T) func([]T) []T {
	return func(list []T) []T {
		if i := slices.Index(list, item); i >= 0 {
			return slices.Delete(list, i, i+1)
		}
		return list
	}
}

// change is a read-modify-write of the session's file under an flock on the
// directory, so a change by another permtui in between is never lost.
func change[T comparable](g *Store, l *lists[T], session string, edit func([]T) []T) error {
	if session == "" {
		return errors.New("grants: empty session id")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	lock, err := safefs.OpenDir(g.dir)
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	defer lock.Close()
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if err := l.load(session, true); err != nil {
		return err
	}
	old := l.by[session]
	list := edit(slices.Clone(old))
	if slices.Equal(list, old) {
		return nil
	}
	if err := l.write(session, list); err != nil {
		return err
	}
	fi, _ := os.Stat(l.file(session))
	l.keep(session, list, fi)
	return nil
}

// write makes list the session's file durably (temp, fsync, rename, fsync
// of the directory), then the same content its backup.
func (g *lists[T]) write(session string, list []T) error {
	if list == nil {
		list = []T{}
	}
	data, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if len(data) > maxFileSize {
		return fmt.Errorf("grants: session %q would exceed %d bytes in %s", session, maxFileSize, g.file(session))
	}
	file := g.file(session)
	if err := safefs.WriteFileSynced(file, data, 0o600); err != nil {
		return err
	}
	// The change is durable now. A backup that cannot be brought up to date
	// is removed: a stale one could restore a revoked grant.
	if err := safefs.WriteFileSynced(file+backupSuffix, data, 0o600); err != nil {
		_ = os.Remove(file + backupSuffix)
	}
	return nil
}
