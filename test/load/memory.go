package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/wire"
)

// memoryLoad is the memory scenario of issue 8: sessions × asks request
// files of about size bytes each, all asks for a person, written before
// permtui starts (the worst burst), served headless with --ask=leave.
type memoryLoad struct{ sessions, asks, size int }

// parseMemoryLoad reads "SESSIONSxASKSxBYTES", e.g. 20x64x1000000.
func parseMemoryLoad(s string) (memoryLoad, error) {
	f := strings.Split(s, "x")
	if len(f) != 3 {
		return memoryLoad{}, fmt.Errorf("-memory wants SESSIONSxASKSxBYTES, not %q", s)
	}
	n, err := ints(strings.Join(f, ","))
	if err != nil {
		return memoryLoad{}, err
	}
	if n[2] > wire.MaxFileSize-4096 {
		return memoryLoad{}, fmt.Errorf("requests of %d bytes are over permtui's cap", n[2])
	}
	return memoryLoad{n[0], n[1], n[2]}, nil
}

// runMemory measures each scenario in spec (comma-separated) in each dir.
func runMemory(cfg config, spec string) error {
	fmt.Fprintln(cfg.out, "| sessions × asks × size | request files | peak RSS | automatic answer meanwhile |")
	fmt.Fprintln(cfg.out, "| --- | --- | --- | --- |")
	for _, one := range split(spec) {
		load, err := parseMemoryLoad(one)
		if err != nil {
			return err
		}
		for _, dir := range cfg.dirs {
			r, err := memoryPhase(cfg, load, dir)
			if err != nil {
				return fmt.Errorf("memory %s in %s: %w", one, dir, err)
			}
			fmt.Fprintf(cfg.out, "| %d × %d × %d B | %.0f MiB | %.0f MiB | %s |\n",
				load.sessions, load.asks, load.size, mib(r.files), mib(r.peakRSS), ms(r.probe))
		}
	}
	return nil
}

// memoryResult is what one memory scenario measured.
type memoryResult struct {
	files, peakRSS int64         // bytes of request files; peak resident set
	probe          time.Duration // the allowed request sent after the burst
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// memoryPhase measures permtui's peak resident memory while it holds the
// load's asks, and the latency of an automatic answer asked for once every
// ask has been read: asks waiting for a person must not hold it up.
func memoryPhase(cfg config, load memoryLoad, dir string) (memoryResult, error) {
	var r memoryResult
	w, err := newWorld(dir, load.sessions)
	if err != nil {
		return r, err
	}
	defer w.remove()
	run := time.Now().UnixMilli()
	var n uint64
	for _, session := range w.sessions {
		tmpl, err := askTemplate(session, load.size)
		if err != nil {
			return r, err
		}
		for range load.asks {
			n++
			id := requestID(run, n)
			data := fill(tmpl, id)
			r.files += int64(len(data))
			if err := os.WriteFile(w.layout.RequestPath(session, id), data, 0o600); err != nil {
				return r, err
			}
		}
	}
	argv := append(permtuiArgs(cfg.permtui, w, nil), "--ask=leave")
	s, err := startServer("permtui", argv, false)
	if err != nil {
		return r, err
	}
	defer func() { _ = s.stop() }()
	rss := make(chan int64, 1)
	stopSampling := make(chan struct{})
	go func() { rss <- sampleRSS(s.cmd.Process.Pid, stopSampling) }()

	// Every ask is read (judged, then parked or deferred) once no request
	// file is left unread; a probe in each session is then answered by
	// the policy.
	if err := s.awaitHeartbeats(w, w.sessions, 120*time.Second); err != nil {
		return r, err
	}
	probe, err := requestTemplate(w.sessions[0])
	if err != nil {
		return r, err
	}
	time.Sleep(5 * time.Second) // the burst is read meanwhile
	n++
	id := requestID(run, n)
	sent := time.Now()
	// Written as a child writes (temp + rename): a file read while it is
	// being written is rejected as invalid.
	if err := safefs.WriteFileAtomic(w.layout.RequestPath(w.sessions[0], id), fill(probe, id)); err != nil {
		return r, err
	}
	if err := awaitFile(w.layout.ResponsePath(w.sessions[0], id), 60*time.Second); err != nil {
		return r, fmt.Errorf("the probe under %d waiting asks: %w", load.sessions*load.asks, err)
	}
	r.probe = time.Since(sent)
	time.Sleep(2 * time.Second)
	close(stopSampling)
	r.peakRSS = <-rss
	return r, nil
}

// askTemplate is a request for a command the policy asks about, padded to
// about size bytes in its value and match value.
func askTemplate(session string, size int) ([]byte, error) {
	return bashTemplate(session, "make "+strings.Repeat("x", max(size/2-200, 1)))
}

// sampleRSS polls the process's resident set every 20 ms until stop, and
// returns the highest value seen or the kernel's own high-water mark,
// whichever is larger.
func sampleRSS(pid int, stop <-chan struct{}) int64 {
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, field := range []string{"VmRSS:", "VmHWM:"} {
			if v := statusKiB(pid, field); v*1024 > peak {
				peak = v * 1024
			}
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}

// statusKiB reads one "<field> N kB" line of /proc/<pid>/status.
func statusKiB(pid int, field string) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

func awaitFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s after %s", path, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
