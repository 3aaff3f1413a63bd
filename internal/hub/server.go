package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/permtui/permtui/internal/loopback"
	"github.com/permtui/permtui/internal/safefs"
)

// Config configures an embedded hub.
type Config struct {
	Listen    string // host:port; port 0 picks a free one
	StoreDir  string // JetStream file storage
	CredsDir  string // credentials, one 0600 file per role and name
	Relays    []string
	Approvers []string
	TLSCert   string
	TLSKey    string
	Retention time.Duration // 0 means DefaultRetention
	// MaxPayload is the server's max_payload; 0 means room for the largest
	// ask. A smaller one stands for an existing deployment's limit.
	MaxPayload int32
	Logger     *slog.Logger // the server's notices, warnings and errors; nil discards them
}

// Hub is a running embedded NATS server with JetStream.
type Hub struct {
	srv      *server.Server
	url      string
	credsDir string
	admin    nkeys.KeyPair // the hub's own user, in process only
	adminPub string
}

// Start runs the embedded server. On first start it issues the credentials
// of every relay host and approver named, and it creates the stream and
// buckets (an existing hub keeps its data). It refuses to listen beyond
// loopback without TLS: credentials and asks would cross the network in
// clear text.
func Start(cfg Config) (*Hub, error) {
	host, port, tlsOn, err := listenAddress(cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Relays) == 0 || len(cfg.Approvers) == 0 {
		return nil, errors.New("hub: at least one relay host and one approver are needed")
	}
	for _, dir := range []string{cfg.StoreDir, cfg.CredsDir} {
		if err := safefs.MkdirPrivate(dir); err != nil {
			return nil, fmt.Errorf("hub: %w", err)
		}
	}
	h := &Hub{credsDir: cfg.CredsDir}
	users, err := h.users(cfg)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		Nkeys:      users,
		MaxPayload: cmp.Or(cfg.MaxPayload, MaxAskBytes+64<<10),
		NoSigs:     true,
	}
	if tlsOn {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("hub: tls: %w", err)
		}
		opts.TLSConfig, opts.TLS = tc, true
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	logs := &serverLog{log: cfg.Logger}
	srv.SetLoggerV2(logs, false, false, false)
	srv.Start()
	// Generous: JetStream recovers its storage before the listener opens.
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("hub: the server did not start: %s", logs.lastError())
	}
	h.srv = srv
	h.url = srv.ClientURL()
	if tlsOn {
		u, _ := url.Parse(h.url)
		u.Scheme = "tls"
		h.url = u.String()
	}
	if err := h.setUp(cfg.Retention); err != nil {
		srv.Shutdown()
		return nil, err
	}
	return h, nil
}

// listenAddress checks where the hub listens: a port (0 for any), and
// clear text only on loopback.
func listenAddress(cfg Config) (host string, port int, tlsOn bool, err error) {
	host, portText, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return "", 0, false, fmt.Errorf("hub: listen address: %w", err)
	}
	port, err = strconv.Atoi(portText)
	if err != nil {
		return "", 0, false, fmt.Errorf("hub: listen port %q", portText)
	}
	port = cmp.Or(port, server.RANDOM_PORT) // to nats-server, 0 means its default 4222
	tlsOn = cfg.TLSCert != "" || cfg.TLSKey != ""
	if !tlsOn && !loopback.Host(host) {
		return "", 0, false, fmt.Errorf("hub: refusing to listen on %s without TLS (--tls-cert and --tls-key); only loopback is served in clear text", cfg.Listen)
	}
	return host, port, tlsOn, nil
}

// users issues (or reuses) each relay's and approver's credentials, with
// their role's permissions, and the hub's own in-process admin key, which
// is never written anywhere.
func (h *Hub) users(cfg Config) ([]*server.NkeyUser, error) {
	var users []*server.NkeyUser
	err := issueUsers(cfg.CredsDir, cfg.Relays, cfg.Approvers, func(u issuedUser) {
		users = append(users, &server.NkeyUser{Nkey: u.pub, Permissions: u.perms})
	})
	if err != nil {
		return nil, err
	}
	admin, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	if h.adminPub, err = admin.PublicKey(); err != nil {
		return nil, err
	}
	h.admin = admin
	return append(users, &server.NkeyUser{Nkey: h.adminPub}), nil
}

// setUp makes the stream and buckets through the hub's own connection, by
// the same path and checks as on an existing cluster (Provision).
func (h *Hub) setUp(retention time.Duration) error {
	nc, err := h.Admin()
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Provision(ctx, nc, retention, 1)
}

// Admin connects in process as the hub's own user, whose key is never
// written anywhere; it may do everything (Start sets up the stream and
// buckets with it).
func (h *Hub) Admin() (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(h.srv), nats.Nkey(h.adminPub, h.admin.Sign))
}

// URL is the client URL to give relays and consoles.
func (h *Hub) URL() string { return h.url }

// CredsFile is the credentials file of a role and name.
func (h *Hub) CredsFile(role, name string) string { return credsFile(h.credsDir, role, name) }

// Shutdown stops the server; the stored asks, decisions and grants stay.
func (h *Hub) Shutdown() {
	h.srv.Shutdown()
	h.srv.WaitForShutdown()
}

// StreamConfigs are the asks stream and the two buckets' streams, each
// file-stored, one message a subject, deduplicated and read directly. The
// grants bucket's is what a key-value bucket with history 1 makes. The
// decisions bucket's is made directly, so that the server itself keeps one
// decision per ask (decision 0161): a second message on a key is refused
// (discard new per subject), and no message can be deleted, purged or
// rolled up. Only the retention removes a decision. A key-value bucket's
// own options cannot say this; it is still read as the bucket.
func StreamConfigs(retention time.Duration, replicas int) []jetstream.StreamConfig {
	if retention <= 0 {
		retention = DefaultRetention
	}
	out := []jetstream.StreamConfig{{
		Name:       AsksStream,
		Subjects:   []string{"permtui.ask.*.*", "permtui.gone.*.*"},
		MaxAge:     retention,
		MaxMsgSize: MaxAskBytes,
	}, {
		Name:                 DecisionsStream,
		Subjects:             []string{DecisionSubjectPrefix + ">"},
		MaxAge:               retention,
		MaxMsgSize:           MaxDecisionBytes,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		DenyDelete:           true,
		DenyPurge:            true,
		AllowRollup:          false,
	}, {
		Name:        GrantsStream,
		Subjects:    []string{GrantSubjectPrefix + ">"},
		MaxMsgSize:  MaxGrantsBytes,
		Discard:     jetstream.DiscardNew,
		AllowRollup: true,
		DenyDelete:  true,
	}}
	for i := range out {
		c := &out[i]
		c.Storage, c.MaxMsgsPerSubject, c.Duplicates, c.AllowDirect = jetstream.FileStorage, 1, dedupWindow, true
		c.Replicas = max(replicas, 1)
	}
	return out
}

// Connect opens an authenticated connection to a hub (embedded or an
// existing cluster). role and name must agree with permtui credentials;
// with a standard .creds file they say what the operator issued it for.
// The connection retries forever: while the hub is away, work waits.
func Connect(url string, c Creds, role, name string, extra ...nats.Option) (*nats.Conn, error) {
	if !c.Standard() && (c.Role != role || c.Name != name) {
		return nil, fmt.Errorf("hub: the credentials are the %s %s's, not the %s %s's", c.Role, c.Name, role, name)
	}
	opts, err := c.options(role, name)
	if err != nil {
		return nil, err
	}
	// The default error handler prints to stderr, which the console owns;
	// callers pass their own to log.
	opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	opts = append(opts, extra...)
	nc, err := nats.Connect(url, opts...)
	if isAuthError(err) {
		return nil, err
	}
	if err != nil {
		// The hub is not there yet: keep trying in the background; the
		// credentials are checked by what the role does once it is.
		return nats.Connect(url, append(opts, nats.RetryOnFailedConnect(true))...)
	}
	if err := Verify(nc, role, name); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// Verify checks, before anything is served, that the server lets these
// credentials act as role's name: it sends the subjects that role's name
// needs (harmless requests whose replies nobody reads), then a ping, and
// the server reports a refused subject before it answers the ping.
// Credentials edited to another name or role authenticate, since the key
// is known, but would otherwise serve silently and send nothing.
func Verify(nc *nats.Conn, role, name string) error {
	var probes, streams []string // and the streams the role reads
	switch role {
	case RoleRelay:
		// The read of one of its host's grants keys: a hub on the
		// permissions from before decision 0211 refuses it.
		probes = []string{"$JS.API.CONSUMER.INFO." + DecisionsStream + "." + RelayConsumer(name),
			"$JS.API.CONSUMER.INFO." + GrantsStream + "." + GrantsConsumer(name),
			"$JS.API.DIRECT.GET." + GrantsStream + "." + GrantSubjectPrefix + name + ".probe"}
		streams = []string{GrantsStream}
	case RoleApprover:
		streams = []string{AsksStream, DecisionsStream, GrantsStream}
		for _, st := range streams {
			probes = append(probes, "$JS.API.STREAM.INFO."+st)
		}
	default:
		return fmt.Errorf("hub: unknown role %q", role)
	}
	for _, p := range probes {
		if err := nc.Publish(p, nil); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
	}
	if role == RoleApprover {
		// A mark under its name, which a hub on the permissions from before
		// decision 0212 refuses; the stream refuses to store it, since it
		// expects another stream.
		probe := nats.NewMsg(DecisionSubjectPrefix + "probe.probe." + name + ".probe")
		probe.Header.Set(jetstream.ExpectedStreamHeader, "permtui-probe")
		if err := nc.PublishMsg(probe); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
	}
	if err := nc.FlushTimeout(verifyTimeout); err != nil {
		return fmt.Errorf("hub: no answer from the hub: %w", err)
	}
	if last := nc.LastError(); last != nil && errors.Is(last, nats.ErrPermissionViolation) {
		return fmt.Errorf("hub: the hub refuses these credentials as the %s %s (%v): use the credentials file issued for it, unedited, on a hub with this permtui's permissions (docs/hub.md, \"Role permissions\")", role, name, last)
	}
	// And the streams the role reads are there (JetStream on, set up).
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), verifyTimeout)
	defer cancel()
	for _, st := range streams {
		if _, err := js.Stream(ctx, st); err != nil {
			return fmt.Errorf("hub: stream %s: %w (is JetStream enabled for this account, and the hub set up as docs/hub.md says?)", st, err)
		}
	}
	return nil
}

const verifyTimeout = 10 * time.Second

// isAuthError: the hub refused the credentials; retrying cannot help.
func isAuthError(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked)
}

// serverLog passes the embedded server's log to slog and keeps its last
// error for the start failure message.
type serverLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	last string
}

func (l *serverLog) emit(level slog.Level, format string, v []any) {
	msg := fmt.Sprintf(format, v...)
	if level >= slog.LevelWarn {
		l.mu.Lock()
		l.last = msg
		l.mu.Unlock()
	}
	if l.log != nil {
		l.log.Log(context.Background(), level, "nats-server: "+msg)
	}
}

func (l *serverLog) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cmp.Or(l.last, "no error reported")
}

func (l *serverLog) Noticef(format string, v ...any) { l.emit(slog.LevelInfo, format, v) }
func (l *serverLog) Warnf(format string, v ...any)   { l.emit(slog.LevelWarn, format, v) }
func (l *serverLog) Fatalf(format string, v ...any)  { l.emit(slog.LevelError, format, v) }
func (l *serverLog) Errorf(format string, v ...any)  { l.emit(slog.LevelError, format, v) }
func (l *serverLog) Debugf(string, ...any)           {}
func (l *serverLog) Tracef(string, ...any)           {}
