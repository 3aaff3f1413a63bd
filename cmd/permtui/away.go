package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/permtui/permtui/internal/loopback"
	"github.com/permtui/permtui/internal/notify"
	"github.com/permtui/permtui/internal/preview"
	"github.com/permtui/permtui/internal/safefs"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/status"
	"github.com/permtui/permtui/internal/web"
)

// awayFlags choose what permtui tells a person away from the console
// (decisions 0181–0183).
type awayFlags struct {
	events     string
	statusFile string
	detail     string
	notifyCmd  string
	ntfy       string
	expiring   time.Duration
	web        webFlags
}

// webFlags place the approve page (decision 0183).
type webFlags struct {
	addr, url, cert, key string
	behindProxy          bool
}

func (f *awayFlags) register(fs flagSet) {
	fs.StringVar(&f.events, "events", "", "append one JSON line per change (agent blocked or unblocked, waiting counts, decisions by kind) to this file (0600; no symlink, none others can read)")
	fs.StringVar(&f.statusFile, "status-file", "", "keep a one-line summary of the waiting asks in this file, for a tmux status line")
	fs.StringVar(&f.detail, "detail", string(status.Counts), "what --events and the notifiers carry: counts (no command text, values or paths) or full")
	fs.StringVar(&f.notifyCmd, "notify-cmd", "", "run this shell command for each new ask and each ask about to expire, the event as JSON on stdin")
	fs.StringVar(&f.ntfy, "ntfy", "", "publish each new ask to this ntfy topic URL (https, or http to this machine, e.g. https://ntfy.sh/mytopic; a token in $PERMTUI_NTFY_TOKEN)")
	fs.DurationVar(&f.expiring, "notify-expiring", notify.DefaultExpiring, "notify again when an ask still waits this long after it was queued (children give up after 10m by default)")
	fs.StringVar(&f.web.addr, "web", "", "serve the approve page, one single-use link per waiting ask, on this address (loopback unless TLS or --web-behind-proxy)")
	fs.StringVar(&f.web.url, "web-url", "", "the approve page's address as the phone reaches it, e.g. https://box.tailnet.ts.net (default: http(s)://the --web address)")
	fs.StringVar(&f.web.cert, "web-cert", "", "TLS certificate (PEM) for the approve page")
	fs.StringVar(&f.web.key, "web-key", "", "TLS key (PEM) for the approve page")
	fs.BoolVar(&f.web.behindProxy, "web-behind-proxy", false, "serve the approve page without TLS on a non-loopback address: a trusted proxy terminates TLS (needs an https --web-url)")
}

func (f *awayFlags) check() error {
	_, detailErr := status.ParseDetail(f.detail)
	var webErr error
	if f.web.addr != "" && f.ntfy == "" && f.notifyCmd == "" {
		// Nothing else shows a person the page's links (decision 0239).
		webErr = errors.New("--web needs --ntfy or --notify-cmd: they carry each ask's single-use link to the page, and nothing else shows it")
	}
	return errors.Join(detailErr, notify.Check(notify.Options{Ntfy: f.ntfy}), f.web.check(), webErr)
}

// check refuses a page anyone on the network could reach in clear text,
// unless the person says a proxy terminates TLS in front of it.
func (f webFlags) check() error {
	if f.addr == "" {
		if f.url != "" || f.cert != "" || f.key != "" || f.behindProxy {
			return errors.New("--web-url, --web-cert, --web-key and --web-behind-proxy need --web ADDR")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return fmt.Errorf("--web %q: %w", f.addr, err)
	}
	if err := together(f.cert != "", f.key != "", "--web-cert and --web-key"); err != nil {
		return err
	}
	if f.url != "" {
		if u, err := url.Parse(f.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
			return fmt.Errorf("--web-url %q: want scheme://host[:port] and nothing after", f.url)
		}
	}
	if f.behindProxy && !strings.HasPrefix(f.url, "https://") {
		return errors.New("--web-behind-proxy needs the https address the proxy serves in --web-url")
	}
	if ip := net.ParseIP(host); f.url == "" && (host == "" || ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("--web %s listens on every address: give the address the phone reaches in --web-url", f.addr)
	}
	if !loopback.Host(host) && f.cert == "" && !f.behindProxy {
		return fmt.Errorf("--web %s is reachable from the network: give --web-cert and --web-key, or --web-behind-proxy when a trusted proxy (tailscale serve) terminates TLS", f.addr)
	}
	return nil
}

// awaySource is a serving loop that takes more subscribers and decisions:
// this host's *serve.Server, or a hub approver (*relay.Approver) standing
// for every relay's.
type awaySource interface {
	Subscribe() (<-chan serve.Event, func())
	web.Decider
}

// startAway subscribes the away outputs before the server runs, so they
// miss nothing; wait returns once they have written the last event, after
// the server's Run returned. What can fail (the events file, the page's
// port) is opened before anything subscribes.
func startAway(srv awaySource, f awayFlags, logger *slog.Logger) (wait func(), err error) {
	var running sync.WaitGroup
	var lines io.WriteCloser // nil without --events
	if f.events != "" {
		if lines, err = safefs.OpenAppendPrivate(f.events); err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
	}
	page, stopPage, err := startWeb(srv, f.web, logger)
	if err != nil {
		if lines != nil {
			lines.Close()
		}
		return nil, err
	}
	if page != nil {
		events, _ := srv.Subscribe() // read to the end
		running.Go(func() { page.Run(events) })
	}
	if f.notifyCmd != "" || f.ntfy != "" {
		o := notify.Options{
			Detail: status.Detail(f.detail), Command: f.notifyCmd, Ntfy: f.ntfy, NtfyToken: os.Getenv(notify.TokenEnv),
			Expiring: f.expiring, Logger: logger,
		}
		if page != nil {
			o.Link = page.Link
		}
		events, _ := srv.Subscribe()
		running.Go(func() { notify.Run(events, o) })
	}
	if lines != nil || f.statusFile != "" {
		o := status.Options{File: f.statusFile, Lines: lines, Detail: status.Detail(f.detail), Logger: logger}
		events, _ := srv.Subscribe()
		running.Go(func() {
			status.Run(events, o)
			if lines != nil {
				lines.Close()
			}
		})
	}
	return func() {
		running.Wait()
		stopPage()
	}, nil
}

// startWeb listens for the approve page; nil without --web.
func startWeb(srv web.Decider, f webFlags, logger *slog.Logger) (*web.Server, func(), error) {
	if f.addr == "" {
		return nil, func() {}, nil
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	scheme := "http"
	if f.cert != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, nil, fmt.Errorf("--web-cert/--web-key: %w", err)
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--web: %w", err)
	}
	base := f.url
	if base == "" { // the address as given, with the port the system chose for :0
		host, _, _ := net.SplitHostPort(f.addr)
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		base = scheme + "://" + net.JoinHostPort(host, port)
	}
	page, err := web.New(web.Options{Decider: srv, BaseURL: base, ReadFile: preview.ReadCurrent, Logger: logger})
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	hs.Handler = page.Handler()
	go func() {
		var err error
		if hs.TLSConfig != nil {
			err = hs.ServeTLS(ln, "", "")
		} else {
			err = hs.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			logger.Error("approve page stopped", "err", err)
		}
	}()
	logger.Info("approve page", "listen", ln.Addr().String(), "url", base)
	return page, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
