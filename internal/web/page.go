package web

import (
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/preview"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/ui"
	"github.com/permtui/permtui/internal/wire"
)

//go:embed page.css
var css string

//go:embed page.html
var pageHTML string

var (
	pageTemplate = template.Must(template.New("page").Parse(pageHTML))
	// The page's only style is inline and pinned by its hash; nothing else
	// loads (no script, image, font or frame).
	csp = "default-src 'none'; style-src 'sha256-" + cssHash() + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

func cssHash() string {
	h := sha256.Sum256([]byte(css))
	return base64.StdEncoding.EncodeToString(h[:])
}

// maxReason bounds a typed reason, in bytes.
const maxReason = 1000

// view is what the template shows.
type view struct {
	CSS     template.CSS
	Title   string
	Message string // a refusal or an outcome, instead of the ask
	Ask     string
	Facts   []ui.Fact
	Action  string
	Form    string
	Shown   string
}

// Handler serves the pages; every other path is not found.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a/{token}", s.show)
	mux.HandleFunc("POST /a/{token}", s.decide)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.o.Logger.Warn("approve page: cross-site post refused", "origin", r.Header.Get("Origin"))
		s.refuse(w, http.StatusForbidden, "Refused: this form was sent from another site.")
	}))
	return s.headers(cop.Handler(mux))
}

// headers sets what every answer carries and refuses a Host other than
// the link's (a DNS rebinding page cannot name this server).
func (s *Server) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer") // the token is in the path
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		if canonicalHost(s.scheme, r.Host) != s.host {
			s.refuse(w, http.StatusMisdirectedRequest, "Refused: this server does not answer for that host name.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) refuse(w http.ResponseWriter, code int, msg string) {
	s.render(w, code, view{Title: "permtui", Message: msg})
}

func (s *Server) render(w http.ResponseWriter, code int, v view) {
	v.CSS = template.CSS(css)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := pageTemplate.Execute(w, v); err != nil {
		s.o.Logger.Warn("approve page not written", "err", err)
	}
}

// gone is the answer for a token that names no waiting ask: unknown,
// altered, used, or its ask decided, withdrawn or expired. One answer for
// all, so a guess learns nothing.
const gone = "No ask waits at this link: it was decided (here, at the console or elsewhere), withdrawn, expired, or the link is not valid."

func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	l, a, ok := s.lookup(r.PathValue("token"))
	if !ok {
		s.refuse(w, http.StatusGone, gone)
		return
	}
	facts := s.disclose(a)
	s.render(w, http.StatusOK, view{
		Title: "permtui · ask " + askNumber(a.ID), Ask: askNumber(a.ID), Facts: facts,
		Action: r.URL.Path, Form: l.form, Shown: shownDigest(a.ID, facts),
	})
}

// disclose is the console's detail of the ask, with the diff of a write or
// edit against the file as it is now.
func (s *Server) disclose(a serve.Ask) []ui.Fact {
	var diff *preview.Diff
	if c, ok := preview.ChangeOf(a.Request); ok && s.o.ReadFile != nil {
		data, err := preview.ReadFor(a.Host, c.Path, s.o.ReadFile)
		diff = new(preview.Compute(c, data, err))
	}
	return ui.Disclosure(a, diff)
}

// shownDigest binds a form to the ask and to exactly what the page showed.
func shownDigest(id serve.AskID, facts []ui.Fact) string {
	h := sha256.New()
	h.Write([]byte(askNumber(id)))
	for _, f := range facts {
		h.Write([]byte{0})
		h.Write([]byte(f.Label + "\x00" + f.Text + "\x00" + f.Kind))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.refuse(w, http.StatusBadRequest, "Refused: the form could not be read.")
		return
	}
	l, a, ok := s.lookup(r.PathValue("token"))
	if !ok {
		s.refuse(w, http.StatusGone, gone)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("form")), []byte(l.form)) != 1 {
		s.o.Logger.Warn("approve page: post without the link's form token refused", "link", l.id)
		s.refuse(w, http.StatusForbidden, "Refused: this form did not come from this page.")
		return
	}
	d := serve.Decision{Ask: a.ID, Approver: ApproverPrefix + l.id}
	switch r.PostForm.Get("decision") {
	case "approve":
		d.State = wire.StateApproved
	case "deny":
		d.State = wire.StateDenied
	case "reason":
		d.State, d.Reason = wire.StateDeniedWithReason, strings.TrimSpace(r.PostForm.Get("reason"))
		if d.Reason == "" || len(d.Reason) > maxReason || !utf8.ValidString(d.Reason) {
			s.refuse(w, http.StatusBadRequest, "Refused: a denial with a reason needs a reason (at most 1000 bytes). Go back and type one.")
			return
		}
	default:
		s.refuse(w, http.StatusBadRequest, "Refused: no decision was chosen.")
		return
	}
	// What the page showed must still be what the ask is: a diff whose
	// file changed since, or another ask, is not decided from it.
	if r.PostForm.Get("shown") != shownDigest(a.ID, s.disclose(a)) {
		s.refuse(w, http.StatusConflict, "Refused: the ask changed since this page was shown. Open the link again to see it as it is now.")
		return
	}
	if !s.claim(l) {
		s.refuse(w, http.StatusGone, gone)
		return
	}
	err := s.o.Decider.Decide(d)
	s.o.Logger.Info("approve page decision", "ask", a.ID, "link", l.id, "state", d.State, "err", err)
	switch {
	case err == nil:
		s.render(w, http.StatusOK, view{Title: "permtui", Message: outcome(d.State)})
	case errors.Is(err, serve.ErrAlreadyDecided), serve.IsExpired(err):
		s.refuse(w, http.StatusGone, gone)
	default:
		s.release(l)
		s.refuse(w, http.StatusServiceUnavailable, "Not decided: "+err.Error()+". The link still works: try again.")
	}
}

func outcome(st wire.State) string {
	if st == wire.StateApproved {
		return "✓ Approved once. The agent has its answer."
	}
	return "✗ Denied. The agent has its answer."
}
