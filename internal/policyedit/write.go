package policyedit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/safefs"
)

// Written says what Apply did.
type Written struct {
	File   string // the file written (a link's target when the policy file is a link)
	Backup string // the previous version under the state dir; "" for a new file
}

// Apply writes a planned change: the previous version is copied under
// <stateDir>/backups, the new text goes to a temp file beside the policy file
// (fsync'd, the old mode kept) that is renamed over it, and the policy is
// loaded again from disk. When the rule does not decide the change's facts
// after all, the previous version is put back and Apply says why.
func Apply(ch *Change, opts resolve.LoadOptions, stateDir string, now time.Time) (Written, error) {
	cur, existed, err := Read(resolve.LoadOptions{}, ch.Target.File)
	if err != nil {
		return Written{}, err
	}
	if existed != ch.Existed || !bytes.Equal(cur, ch.Old) {
		return Written{}, fmt.Errorf("%s changed since the preview; nothing was written, run the command again", ch.Target.File)
	}
	// Only the file the preview checked is written (through a link, as
	// dotfile managers keep config): a link repointed since then leads to a
	// file no check saw.
	real, err := realFile(ch.Target.File)
	if err != nil {
		return Written{}, err
	}
	if real != ch.Real {
		return Written{}, fmt.Errorf("%s changed since the preview: it now leads to %s, not %s; nothing was written, run the command again", ch.Target.File, real, ch.Real)
	}
	file := ch.Target.File
	if existed {
		file = ch.Real
	}
	w := Written{File: file}
	if existed {
		if w.Backup, err = backup(stateDir, ch.Target, cur, now); err != nil {
			return Written{}, err
		}
	}
	mode := fs.FileMode(0o600) // a new file's; an old one keeps its own
	if fi, err := os.Stat(file); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := safefs.WriteFileSynced(file, ch.New, mode); err != nil {
		return Written{}, err
	}
	v := resolve.Load(opts).Evaluate(ch.Facts, nil)
	if err := decides(v, ch.Target, ch.Rule, ch.Facts); err != nil {
		if rerr := restore(file, cur, existed, mode); rerr != nil {
			return w, fmt.Errorf("%w; restoring the previous version failed too: %v (it is in %s)", err, rerr, w.Backup)
		}
		return w, fmt.Errorf("written, then checked and put back: %w", err)
	}
	return w, nil
}

// backup copies data to <stateDir>/backups/<time>-<scope>-<file name>, 0600,
// durably and never over another backup.
func backup(stateDir string, t Target, data []byte, now time.Time) (string, error) {
	dir := filepath.Join(stateDir, "backups")
	if err := safefs.MkdirPrivate(dir); err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	d, err := safefs.OpenDir(dir)
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	defer d.Close()
	label := string(t.Scope)
	if t.Agent != "" {
		label += "-" + t.Agent
	}
	name := now.UTC().Format("20060102T150405.000Z") + "-" + label + "-" + filepath.Base(t.File)
	name = strings.ReplaceAll(name, string(filepath.Separator), "_")
	// Two edits within a millisecond (one after the other, under the lock)
	// get numbered names.
	free := name
	err = d.WriteFileNewSynced(free, data)
	for n := 2; errors.Is(err, fs.ErrExist) && n < 100; n++ {
		free = name + "." + strconv.Itoa(n)
		err = d.WriteFileNewSynced(free, data)
	}
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	return filepath.Join(dir, free), nil
}

// restore puts the previous version back, or removes a file permtui created.
func restore(file string, old []byte, existed bool, mode fs.FileMode) error {
	if !existed {
		return os.Remove(file)
	}
	return safefs.WriteFileSynced(file, old, mode)
}

// Lock holds the exclusive lock of the directory of the file t changes (a
// link's target), creating it 0700 when missing, so one writer at a time
// reads, plans, writes and verifies it: two writers that both read the old
// file would each write it without the other's rule. It waits up to wait
// for another writer, then fails naming it (decision 0141).
func Lock(t Target, wait time.Duration) (unlock func(), err error) {
	file := t.File
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real
	}
	dir := filepath.Dir(file)
	if err := safefs.MkdirPrivate(dir); err != nil {
		return nil, err
	}
	d, err := safefs.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	if err := d.LockWait(wait); err != nil {
		d.Close()
		return nil, fmt.Errorf("another writer holds %s: %w; nothing written", t.File, err)
	}
	return func() { d.Close() }, nil
}
