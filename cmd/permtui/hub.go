package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/permtui/permtui/internal/headless"
	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/relay"
	"github.com/permtui/permtui/internal/wire"
)

const hubSynopsis = `hub [flags]

Runs the hub relays and consoles meet at: an embedded NATS server with
JetStream, its data under the state dir. On first start it writes the
credentials of each relay host and approver (0600) and prints where they are.
See docs/hub.md.`

const relaySynopsis = `relay --hub URL --creds FILE [--host NAME] [flags]

Serves this host's inboxes as serve does (heartbeat, local policy, local
audit, automatic answers at once) and sends each ask that needs a person to
the hub; the decision that comes back is audited here, then written.`

func runHub(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "users":
			return runHubUsers(args[1:], stdout, stderr)
		case "provision":
			return runHubProvision(ctx, args[1:], stdout, stderr)
		}
	}
	var (
		stateDir, listen, store, tlsCert, tlsKey string
		relays, approvers                        listFlag
		retention                                time.Duration
	)
	fs := newFlagSet("hub", hubSynopsis, stdout, stderr)
	fs.StringVar(&stateDir, "state-dir", "", "permtui state (default $PERMTUI_STATE_DIR, else $XDG_STATE_HOME/permtui, else ~/.local/state/permtui); credentials go to <state-dir>/hub/creds")
	fs.StringVar(&listen, "listen", "127.0.0.1:4222", "address to listen on; beyond loopback only with --tls-cert and --tls-key")
	fs.StringVar(&store, "store", "", "JetStream file storage (default <state-dir>/hub/store)")
	fs.Var(&relays, "relay-host", "a relay host to issue credentials for (repeatable; default this machine's host name)")
	fs.Var(&approvers, "approver", "an approver to issue credentials for (repeatable; default \"console\")")
	fs.StringVar(&tlsCert, "tls-cert", "", "TLS certificate (PEM)")
	fs.StringVar(&tlsKey, "tls-key", "", "TLS private key (PEM)")
	fs.DurationVar(&retention, "retention", hub.DefaultRetention, "how long asks and decisions stay on the hub")
	tlsPair := func() error { return together(tlsCert != "", tlsKey != "", "--tls-cert and --tls-key") }
	if err := fs.parse(args, tlsPair); err != nil {
		return err
	}
	if stateDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		stateDir = defaultStateDir(os.Getenv, home)
	}
	store = cmp.Or(store, filepath.Join(stateDir, "hub", "store"))
	if len(relays) == 0 {
		relays = listFlag{thisHost()}
	}
	if len(approvers) == 0 {
		approvers = listFlag{"console"}
	}
	logger, closeLog, err := stateLog(filepath.Join(stateDir, "hub"))
	if err != nil {
		return err
	}
	defer closeLog()
	h, err := hub.Start(hub.Config{
		Listen: listen, StoreDir: store, CredsDir: filepath.Join(stateDir, "hub", "creds"),
		Relays: relays, Approvers: approvers, TLSCert: tlsCert, TLSKey: tlsKey, Retention: retention,
		Logger: logger,
	})
	if err != nil {
		return err
	}
	defer h.Shutdown()
	fmt.Fprintf(stdout, "permtui hub at %s (JetStream storage %s, log %s)\n", h.URL(), store, filepath.Join(stateDir, "hub", "permtui.log"))
	for _, r := range relays {
		fmt.Fprintf(stdout, "  relay %-12s permtui relay --hub %s --creds %s\n", r, h.URL(), h.CredsFile(hub.RoleRelay, r))
	}
	for _, a := range approvers {
		fmt.Fprintf(stdout, "  approver %-9s permtui --hub %s --creds %s\n", a, h.URL(), h.CredsFile(hub.RoleApprover, a))
	}
	<-ctx.Done()
	return nil
}

var notHostChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// thisHost is the machine's host name as a relay name: what a subject
// token may hold.
func thisHost() string {
	name, err := os.Hostname()
	if name = notHostChars.ReplaceAllString(name, "-"); err != nil || !hub.ValidHost(name) {
		return "localhost"
	}
	return name
}

// hubFlags attach serve (the console or --headless) or a relay to a hub.
type hubFlags struct {
	url   string
	creds string
	name  string
}

func (h *hubFlags) register(fs flagSet, nameFlag, nameHelp string) {
	fs.StringVar(&h.url, "hub", "", "the hub's URL (permtui hub prints it); see docs/hub.md")
	fs.StringVar(&h.creds, "creds", "", "credentials file for the hub")
	fs.StringVar(&h.name, nameFlag, "", nameHelp)
}

// hubConn is a connection to the hub with permtui's log beside it.
type hubConn struct {
	nc     *nats.Conn
	name   string // the relay host or approver name
	logger *slog.Logger
	close  func()
}

// connect opens the log in stateDir, reads the credentials and connects
// with role; the name comes from the credentials, or from the flag with a
// standard NATS .creds file.
func (h *hubFlags) connect(role, stateDir string) (hubConn, error) {
	logger, closeLog, err := stateLog(stateDir)
	if err != nil {
		return hubConn{}, err
	}
	c, err := hub.ReadCreds(h.creds)
	name := h.name
	switch {
	case err != nil:
	case !c.Standard() && name != "" && name != c.Name:
		err = fmt.Errorf("the credentials are %s's, not %s's", c.Name, wire.QuoteShort(name))
	case !c.Standard():
		name = c.Name
	case !hub.ValidHost(name):
		err = fmt.Errorf("a name is needed with a standard .creds file: letters, digits, '-' and '_' (got %s)", wire.QuoteShort(name))
	}
	var nc *nats.Conn
	if err == nil {
		nc, err = hub.Connect(h.url, c, role, name, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			logger.Warn("hub", "err", err)
		}))
		if err != nil {
			err = fmt.Errorf("hub %s: %w", h.url, err)
		}
	}
	if err != nil {
		closeLog()
		return hubConn{}, err
	}
	return hubConn{nc: nc, name: name, logger: logger, close: func() { nc.Close(); closeLog() }}, nil
}

func (h *hubFlags) check() error { return together(h.url != "", h.creds != "", "--hub and --creds") }

// attachHub runs the console or the headless approver against a hub: it sees
// the asks of every relay, and its decisions go to the hub.
func attachHub(ctx context.Context, f serveFlags, stdout io.Writer) error {
	hc, err := f.hub.connect(hub.RoleApprover, f.stateDir)
	if err != nil {
		return err
	}
	defer hc.close()
	a, err := relay.NewApprover(hc.nc, hc.name, hc.logger, inbox.Budget{})
	if err != nil {
		return err
	}
	awayDone, err := startAway(a, f.away, hc.logger)
	if err != nil {
		return err
	}
	defer awayDone()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := func(ctx context.Context) error { a.Run(ctx); return nil }
	return serveWhile(ctx, cancel, run, func() error {
		// The policy is the relays': rules are written on their hosts.
		return runFrontEnd(ctx, a, f.frontEnd, stdout, consoleSetup{overHub: true})
	})
}

type relayFlags struct {
	common
	hub  hubFlags
	poll bool
}

func runRelay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f relayFlags
	fs := newFlagSet("relay", relaySynopsis, stdout, stderr)
	f.common.register(fs)
	f.hub.register(fs, "host", "this host's name at the hub (default: the name in --creds)")
	fs.BoolVar(&f.poll, "poll", false, "rescan the inbox instead of using inotify (network filesystems)")
	if err := fs.parse(args, f.hub.check); err != nil {
		return err
	}
	if f.hub.url == "" {
		return fs.mistake(errors.New("--hub and --creds are required"))
	}
	if err := f.resolveDefaults(); err != nil {
		return err
	}
	if err := f.checkAgentDir(); err != nil {
		return err
	}
	return relayUntilDone(ctx, f, stdout)
}

// relayUntilDone serves the local inbox with the relay as a subscriber,
// printing one JSON line per event as serve --headless does.
func relayUntilDone(ctx context.Context, f relayFlags, stdout io.Writer) error {
	hc, err := f.hub.connect(hub.RoleRelay, f.stateDir)
	if err != nil {
		return err
	}
	defer hc.close()
	grants := relay.NewGrants()
	if err := grants.ReadRecorded(f.stateDir); err != nil {
		// Narrower, not wrong: the bucket's grants apply again once
		// recorded anew (decision 0247).
		hc.logger.Warn("the audit log cannot be read for the grants this relay recorded: the grants bucket adds none", "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := startLocal(ctx, f.common, f.poll, hc.logger, grants, nil, true)
	if err != nil {
		return err
	}
	r, err := relay.New(srv, hc.nc, hc.name, grants, hc.logger)
	if err != nil {
		return err
	}
	relayed := make(chan struct{})
	go func() { defer close(relayed); r.Run(ctx) }()
	err = serveWhile(ctx, cancel, srv.Run, func() error { return headless.Run(ctx, srv, stdout, headless.Leave) })
	<-relayed // its last acks and grants go out before the connection closes
	return err
}
