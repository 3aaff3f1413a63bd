// Package web is the approve page: one page per waiting ask at an
// unguessable link, with the console's disclosure and Approve once, Deny
// and Deny with a reason. A link decides its one ask once; it dies when the
// ask is decided anywhere, withdrawn or expires, and a cross-site post, an
// altered token or a page older than the ask's current disclosure is
// refused (decision 0183).
package web

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/permtui/permtui/internal/serve"
)

// Decider is the one decision path (*serve.Server).
type Decider interface {
	Decide(serve.Decision) error
}

// Options configure the page.
type Options struct {
	Decider Decider
	// BaseURL is how the person's phone reaches the page (the link's
	// prefix); requests for any other host are refused.
	BaseURL string
	// ReadFile reads the file a write or edit ask changes, for its diff
	// (preview.ReadCurrent).
	ReadFile func(string) ([]byte, error)
	Logger   *slog.Logger
}

// ApproverPrefix begins the approver recorded for a decision made on the
// page; the link's id follows.
const ApproverPrefix = "web:"

// Server holds the links of the waiting asks.
type Server struct {
	o      Options
	scheme string
	host   string // canonicalHost of the base URL's

	mu    sync.Mutex
	asks  map[serve.AskID]serve.Ask // waiting for a person
	links map[[sha256.Size]byte]*link
	byAsk map[serve.AskID]*link
	done  bool // the subscription ended: nothing waits any more
}

// link is one ask's page. Only its token's digest is kept as a key, so the
// map's lookups reveal nothing of a token.
type link struct {
	id   string // names the link in the audit and the log; not a secret
	url  string
	key  [sha256.Size]byte
	ask  serve.AskID
	form string // the per-link form token
	used bool   // a decision was sent from it
}

// New makes the page's server; feed it a subscription with Run.
func New(o Options) (*Server, error) {
	u, err := url.Parse(o.BaseURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the approve page's base URL %q names no host", o.BaseURL)
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return &Server{o: o, scheme: u.Scheme, host: canonicalHost(u.Scheme, u.Host), asks: map[serve.AskID]serve.Ask{},
		links: map[[sha256.Size]byte]*link{}, byAsk: map[serve.AskID]*link{}}, nil
}

// Run follows one subscription until it closes: asks waiting for a person
// can be shown, and an ask decided anywhere, withdrawn or expired takes its
// link with it.
func (s *Server) Run(events <-chan serve.Event) {
	for ev := range events {
		switch ev := ev.(type) {
		case serve.AskQueued:
			s.mu.Lock()
			s.asks[ev.Ask.ID] = ev.Ask
			s.mu.Unlock()
		case serve.Decided:
			s.forget(ev.Ask.ID)
		case serve.Withdrawn:
			s.forget(ev.ID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	clear(s.asks)
	clear(s.links)
	clear(s.byAsk)
}

func (s *Server) forget(id serve.AskID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.asks, id)
	if l := s.byAsk[id]; l != nil {
		delete(s.links, l.key)
		delete(s.byAsk, id)
	}
}

// Link is the page's link for an ask, made on first use; "" when the page
// is not serving any more.
func (s *Server) Link(id serve.AskID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return ""
	}
	if l := s.byAsk[id]; l != nil {
		return l.url
	}
	token := randomToken()
	l := &link{key: sha256.Sum256([]byte(token)), ask: id, form: randomToken(), url: s.o.BaseURL + "/a/" + token}
	l.id = hex.EncodeToString(l.key[:6])
	s.links[l.key], s.byAsk[id] = l, l
	s.o.Logger.Info("approve link made", "ask", id, "link", l.id)
	return l.url
}

// randomToken is 256 bits from the system's CSPRNG, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// canonicalHost is a host as a browser sends it for a URL: lower case,
// without the scheme's default port.
func canonicalHost(scheme, host string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil &&
		(scheme == "https" && port == "443" || scheme == "http" && port == "80") {
		if strings.Contains(h, ":") { // IPv6 keeps its brackets
			return "[" + h + "]"
		}
		return h
	}
	return host
}

// lookup finds a token's unused link and its ask while it still waits.
func (s *Server) lookup(token string) (*link, serve.Ask, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.links[sha256.Sum256([]byte(token))]
	if l == nil || l.used {
		return nil, serve.Ask{}, false
	}
	a, ok := s.asks[l.ask]
	return l, a, ok
}

// claim marks a link used; false if it was used already or is gone.
func (s *Server) claim(l *link) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.used || s.links[l.key] != l {
		return false
	}
	l.used = true
	return true
}

// release gives a claimed link back when its decision was not taken, so the
// person can try again from the same link; serve, or the hub, still takes
// at most one decision per ask.
func (s *Server) release(l *link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.used = false
}

func askNumber(id serve.AskID) string { return strconv.FormatUint(uint64(id), 10) }
