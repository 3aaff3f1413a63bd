package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// piPeer is pi's own serving node: the published package's
// ForwardedRequestServer on its 250 ms poll, run by ../shared/pi-peer
// (server.ts through tsx.sh, after that folder's setup.sh has installed it).
type piPeer struct {
	tsx    string // tsx.sh
	server string // server.ts
}

// findPiPeer looks for pi-peer in dir and its install; why says what is
// missing, for the report, when it cannot run.
func findPiPeer(dir string) (p piPeer, why string) {
	p = piPeer{tsx: filepath.Join(dir, "tsx.sh"), server: filepath.Join(dir, "server.ts")}
	for _, f := range []string{p.tsx, p.server} {
		if _, err := os.Stat(f); err != nil {
			return p, fmt.Sprintf("%s is missing (pi-peer sits in ../shared beside the checkout)", f)
		}
	}
	peerDir := os.Getenv("PEER_DIR")
	if peerDir == "" {
		peerDir = "/tmp/peerenv"
	}
	pkg := filepath.Join(peerDir, "node_modules", "@gotgenes", "pi-permission-system", "package.json")
	if _, err := os.Stat(pkg); err != nil {
		return p, fmt.Sprintf("pi's package is not installed in %s: run %s first", peerDir, filepath.Join(dir, "setup.sh"))
	}
	return p, ""
}

// args serves the world's first session with the world's policy; pi's node
// serves exactly one session.
func (p piPeer) args(w *world) []string {
	return []string{p.tsx, p.server, "--root", w.layout.Root, "--session", w.sessions[0], "--config", w.configFile()}
}

// awaitServing waits for the line server.ts prints on stderr once its poll
// runs (pi 20.7.3 publishes no heartbeat), passing stderr on.
func awaitServing(s *server, stderr io.Reader, timeout time.Duration) error {
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			if !announced && strings.Contains(line, `"serving"`) {
				announced = true
				close(serving)
				continue
			}
			fmt.Fprintln(os.Stderr, line)
		}
	}()
	select {
	case <-serving:
		return nil
	case err := <-s.exit:
		s.exit <- err
		return fmt.Errorf("%s exited: %v", s.name, err)
	case <-time.After(timeout):
		return errors.New(s.name + ": never said it was serving")
	}
}
