package inbox

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// claimKnown claims every id known at start (the explicit ones).
func (in *Inbox) claimKnown() {
	for _, id := range in.sessionIDs(nil) {
		in.claim(id)
	}
}

// claim starts serving id unless another live node holds a fresh heartbeat
// for it; then it reports that and leaves the id for a later recheck. It
// reports whether serving started; the caller makes sure a scan follows.
func (in *Inbox) claim(id string) bool {
	ev, started := in.claimLocked(id)
	if ev != nil {
		in.emit(ev)
	}
	return started
}

// claimLocked is claim under hbMu; the event is sent after it is released.
// Serving needs two things: the session's exclusive lock (lockSession),
// which no other permtui can hold at the same time (a check of the
// heartbeat alone let two instances started together both serve), and no
// fresh record of another live node (pi's own serving node takes no lock).
// Decisions 0051, 0232.
func (in *Inbox) claimLocked(id string) (Event, bool) {
	in.hbMu.Lock()
	defer in.hbMu.Unlock()
	now := in.cfg.Now()
	in.mu.Lock()
	s := in.sessions[id]
	in.mu.Unlock()
	if s == nil || s.serving {
		return nil, false
	}
	lock, held, gone := in.lockSession(id)
	if gone {
		return nil, false // discovery forgets it on its next pass
	}
	if !held {
		// Another permtui holds the lock; its record, once written, names it.
		pid := 0
		if hb, ok := in.readHeartbeat(id); ok && hb.PID != in.cfg.PID && safefs.PIDAlive(hb.PID) {
			pid = hb.PID
		}
		// Rechecked every LockRecheck: the kernel drops the lock the moment
		// the holder dies, so the takeover follows within one.
		return in.yield(s, id, pid, true, now), false
	}
	if pid, taken := in.foreignServer(id, now); taken && !in.formerHolder(s, pid) {
		lock.Release()
		// A killed permtui's lock goes a moment before its process does, so
		// a record we did not see while its lock was held may be a holder
		// still exiting: the first look again comes after LockRecheck,
		// later ones (pi's node serves) after ContentionRecheck.
		wait := in.cfg.ContentionRecheck
		in.mu.Lock()
		if !s.elsewhere || s.otherPermtui || s.otherPID != pid {
			wait = min(wait, in.cfg.LockRecheck)
		}
		in.mu.Unlock()
		return in.yield(s, id, pid, false, now.Add(wait)), false
	}
	if err := in.publish(id, now); err != nil {
		// Without a heartbeat newer children abandon in 2 s, but older ones
		// still wait: serve anyway and retry the heartbeat every tick.
		in.cfg.Logger.Warn("heartbeat", "session", id, "err", err)
	}
	in.mu.Lock()
	s.serving, s.otherPID, s.otherPermtui, s.published, s.lock = true, 0, false, true, lock
	in.mu.Unlock()
	return Serving{Session: id}, true
}

// formerHolder reports whether pid is the permtui we saw holding the
// session's lock. Now that we hold it, that permtui has died (a live one
// removes its record before it lets go), so its record, fresh as it may
// look while the process finishes exiting, blocks nothing: waiting for the
// exit took a standby past the 2 s a child allows when the machine was
// loaded. pi's own node takes no lock, so its record is never this.
func (in *Inbox) formerHolder(s *sessionState, pid int) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return pid != 0 && s.elsewhere && s.otherPermtui && s.otherPID == pid
}

// yield records that another node serves id and returns the event to report
// when that is news. hbMu is held.
func (in *Inbox) yield(s *sessionState, id string, pid int, permtui bool, next time.Time) Event {
	in.mu.Lock()
	defer in.mu.Unlock()
	changed := s.otherPID != pid || s.otherPermtui != permtui || !s.elsewhere
	s.otherPID, s.otherPermtui, s.elsewhere, s.nextClaim = pid, permtui, true, next
	if !changed {
		return nil
	}
	return ServedElsewhere{Session: id, PID: pid, Permtui: permtui}
}

// lockSession takes the exclusive lock of the session: serving/<enc(id)>.lock,
// which only permtui touches (pi lists *.json there; decision 0232). Not the
// session directory: a child's cleanup removes that, and a lock on the removed
// directory kept nobody out of the new one. held is false when another
// holder has it. An explicit session's directory is created if missing (pi's
// layout has it); a discovered one that vanished is gone, and is not
// recreated. A lock file that cannot be opened or locked otherwise (serving/
// a symlink) is logged and the session served without the lock, as before
// there was one.
func (in *Inbox) lockSession(id string) (lock *safefs.FileLock, held, gone bool) {
	var dir *safefs.Dir
	var err error
	if in.discover {
		dir, err = safefs.OpenDir(in.cfg.Layout.Root, "sessions", wire.EncodeSegment(id))
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, true
		}
	} else if err = safefs.MkdirPrivate(in.cfg.Layout.Root); err == nil {
		dir, err = safefs.OpenDirPrivate(in.cfg.Layout.Root, "sessions", wire.EncodeSegment(id))
	}
	if err == nil {
		dir.Close()
		// Opened afresh, not the kept serving/: a lock in a directory moved
		// away would exclude nobody.
		if dir, err = safefs.OpenDirPrivate(in.cfg.Layout.Root, "serving"); err == nil {
			lock, err = dir.TryLockFile(wire.EncodeSegment(id) + ".lock")
			dir.Close()
		}
	}
	if err != nil {
		in.cfg.Logger.Warn("session lock", "session", id, "err", err)
		return nil, true, false
	}
	return lock, lock != nil, false
}

// heartbeatLoop refreshes our records and rechecks contended ids, from its
// own goroutine so a slow scan never lets the heartbeat go stale.
func (in *Inbox) heartbeatLoop(ctx context.Context) {
	tick := time.NewTicker(in.cfg.HeartbeatInterval)
	defer tick.Stop()
	lockTick := time.NewTicker(in.cfg.LockRecheck)
	defer lockTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			in.refreshAll()
		case <-lockTick.C:
			in.recheckLocked()
		}
	}
}

// recheckLocked tries again for the sessions served elsewhere that are due,
// more often than the heartbeat tick, so a standby takes over well within
// the 2 s a child allows a dead server (one TryLock per such session; there
// are none unless two instances run, or pi's node serves one).
func (in *Inbox) recheckLocked() {
	now := in.cfg.Now()
	in.claimDue(func(s *sessionState) bool { return s.elsewhere && !now.Before(s.nextClaim) })
}

func (in *Inbox) refreshAll() {
	now := in.cfg.Now()
	for _, id := range in.servedIDs() {
		if ev := in.refresh(id, now); ev != nil {
			in.emit(ev) // after hbMu is released: emit may wait for the reader
		}
	}
	in.claimDue(func(s *sessionState) bool { return !now.Before(s.nextClaim) })
}

// claimDue claims the sessions not served that due accepts, and has each
// whose serving started scanned.
func (in *Inbox) claimDue(due func(*sessionState) bool) {
	for _, id := range in.sessionIDs(func(s *sessionState) bool { return !s.serving && due(s) }) {
		if in.claim(id) {
			in.scanSoon(id)
		}
	}
}

// refresh rewrites our record, unless another live node has taken the id
// over meanwhile (a pi root that gained a UI): then permtui steps back
// rather than race it, and the event to report is returned.
func (in *Inbox) refresh(id string, now time.Time) Event {
	in.hbMu.Lock()
	defer in.hbMu.Unlock()
	in.mu.Lock()
	st := in.sessions[id]
	serving := st != nil && st.serving
	in.mu.Unlock()
	if !serving {
		return nil // released (or forgotten) since the tick listed it
	}
	// While the name is still our own file it names our pid: nothing to
	// read (one fstatat instead of an open and a read per session).
	if st.beat == nil || !st.beat.Owned() {
		if pid, taken := in.foreignServer(id, now); taken {
			in.mu.Lock()
			st.serving, st.published = false, false
			lock := st.lock
			st.lock = nil
			in.mu.Unlock()
			lock.Release()
			return in.yield(st, id, pid, false, now.Add(in.cfg.ContentionRecheck))
		}
	}
	if err := in.publish(id, now); err != nil {
		in.cfg.Logger.Warn("heartbeat", "session", id, "err", err)
	}
	return nil
}

// publish writes our record into serving/, which is opened (and created)
// without following a symlink: a child must not redirect our heartbeat.
// After the first write the record is republished by exchanging it with a
// spare file kept open, which allocates no inode (decision 0091); a file
// system that cannot exchange names gets temp + rename each time. hbMu is
// held.
func (in *Inbox) publish(id string, now time.Time) error {
	data, err := wire.MarshalHeartbeat(wire.Heartbeat{SessionID: id, PID: in.cfg.PID, UpdatedAt: now.UnixMilli()})
	if err != nil {
		return err
	}
	in.mu.Lock()
	s := in.sessions[id]
	in.mu.Unlock()
	if s.beat != nil {
		err := s.beat.Publish(data)
		if err == nil {
			return nil
		}
		s.beat.Close()
		s.beat = nil
		if errors.Is(err, safefs.ErrSwapUnsupported) {
			in.noSwap = true
		} else {
			in.closeServingDir() // serving/ may have been replaced
		}
	}
	dir, err := in.servingDir()
	if err != nil {
		return err
	}
	if in.noSwap {
		return dir.WriteFileAtomic(heartbeatName(id), data)
	}
	if s.beat, err = dir.NewSwap(heartbeatName(id), data); err != nil {
		in.closeServingDir()
	}
	return err
}

// servingDir is serving/, opened once and kept. hbMu is held.
func (in *Inbox) servingDir() (*safefs.Dir, error) {
	if in.hbDir != nil {
		return in.hbDir, nil
	}
	if err := safefs.MkdirPrivate(in.cfg.Layout.Root); err != nil {
		return nil, err
	}
	dir, err := safefs.OpenDirPrivate(in.cfg.Layout.Root, "serving")
	if err != nil {
		return nil, err
	}
	in.hbDir = dir
	return dir, nil
}

func (in *Inbox) closeServingDir() {
	if in.hbDir != nil {
		in.hbDir.Close()
		in.hbDir = nil
	}
}

func heartbeatName(id string) string { return wire.EncodeSegment(id) + ".json" }

// MaxHeartbeatSkew is how far in the future a record's updatedAt may be
// and still count as fresh (clocks of processes on one host agree closely).
const MaxHeartbeatSkew = 2 * time.Second

// foreignServer reports the pid of another live node with a fresh record
// for id (wire-protocol §7.3 classification: only "alive" counts). A record
// dated beyond MaxHeartbeatSkew ahead is not fresh: age alone would never
// make it stale, so one forged write could block the id forever
// (decision 0051). A zombie's record is a dead node's: a killed holder
// drops its lock at once but answers kill(pid, 0) until its parent collects
// it, and a standby that looked then waited ContentionRecheck.
func (in *Inbox) foreignServer(id string, now time.Time) (int, bool) {
	hb, ok := in.readHeartbeat(id)
	if !ok || hb.PID == in.cfg.PID || hb.UpdatedAt > now.Add(MaxHeartbeatSkew).UnixMilli() {
		return 0, false
	}
	if wire.ClassifyHeartbeat(hb, now, safefs.PIDRunning) != wire.LivenessAlive {
		return 0, false
	}
	return hb.PID, true
}

// withdrawHeartbeats removes the records we published, and only those that
// still name our pid: another node's record is never deleted.
func (in *Inbox) withdrawHeartbeats() {
	in.release(in.sessionIDs(nil), false)
	in.hbMu.Lock()
	in.closeServingDir()
	in.hbMu.Unlock()
}

// release stops serving ids: it removes our records of them, then drops
// their locks. forget also drops what is known about them (discovery forgets
// a session whose directory is gone, or an idle one to make room).
func (in *Inbox) release(ids []string, forget bool) {
	in.releaseLocked(ids, forget)
	if forget { // after hbMu is released: emit may wait for the reader
		for _, id := range ids {
			in.emit(Forgotten{Session: id})
		}
	}
}

// releaseLocked is release under hbMu.
func (in *Inbox) releaseLocked(ids []string, forget bool) {
	in.hbMu.Lock()
	defer in.hbMu.Unlock()
	in.mu.Lock()
	var published []string
	var locks []*safefs.FileLock
	var cached []*dirs
	for _, id := range ids {
		s := in.sessions[id]
		if s == nil {
			continue
		}
		if s.published {
			published = append(published, id)
		}
		locks = append(locks, s.lock) // nil when served without one
		if s.dirs != nil {
			cached = append(cached, s.dirs)
		}
		if s.beat != nil {
			s.beat.Close() // removes the spare; the record is removed below
			s.beat = nil
		}
		s.serving, s.published, s.lock, s.dirs = false, false, nil, nil
		in.clearBacklog(s)
		if forget {
			delete(in.sessions, id)
		}
	}
	in.mu.Unlock()
	for _, d := range cached {
		in.releaseDirs(d)
	}
	// Released after our records are gone, so a successor that wins the
	// lock never sees our record as the current one.
	defer func() {
		for _, l := range locks {
			l.Release()
		}
	}()
	if len(published) == 0 {
		return
	}
	dir, err := safefs.OpenDir(in.cfg.Layout.Root, "serving")
	if err != nil {
		in.cfg.Logger.Warn("remove heartbeats", "err", err)
		return
	}
	defer dir.Close()
	for _, id := range published {
		if hb, ok := readHeartbeatIn(dir, id); ok && hb.PID == in.cfg.PID {
			if err := dir.Remove(heartbeatName(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
				in.cfg.Logger.Warn("remove heartbeat", "session", id, "err", err)
			}
		}
	}
}

// readHeartbeat returns the usable record for id; unreadable, unusable or
// behind a symlinked serving/ counts as absent.
func (in *Inbox) readHeartbeat(id string) (wire.Heartbeat, bool) {
	dir, err := safefs.OpenDir(in.cfg.Layout.Root, "serving")
	if err != nil {
		return wire.Heartbeat{}, false
	}
	defer dir.Close()
	return readHeartbeatIn(dir, id)
}

func readHeartbeatIn(dir *safefs.Dir, id string) (wire.Heartbeat, bool) {
	data, _, err := dir.ReadFileID(heartbeatName(id), wire.MaxFileSize)
	if err != nil {
		return wire.Heartbeat{}, false
	}
	hb, err := wire.ParseHeartbeat(data)
	return hb, err == nil
}
