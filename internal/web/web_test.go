package web

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// decider records decisions, as serve's decision path would take them.
type decider struct {
	mu   sync.Mutex
	got  []serve.Decision
	errs error
}

func (d *decider) Decide(dec serve.Decision) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, dec)
	return d.errs
}

func (d *decider) decisions() []serve.Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]serve.Decision(nil), d.got...)
}

type page struct {
	t      *testing.T
	s      *Server
	srv    *httptest.Server
	dec    *decider
	events chan serve.Event
	file   string // the current content of the file a write ask changes
}

func newPage(t *testing.T) *page {
	t.Helper()
	p := &page{t: t, dec: &decider{}, events: make(chan serve.Event), file: "old line\n"}
	var h http.Handler
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(p.srv.Close)
	s, err := New(Options{Decider: p.dec, BaseURL: p.srv.URL, ReadFile: func(string) ([]byte, error) { return []byte(p.file), nil }})
	if err != nil {
		t.Fatal(err)
	}
	p.s, h = s, s.Handler()
	done := make(chan struct{})
	go func() { defer close(done); s.Run(p.events) }()
	t.Cleanup(func() { close(p.events); <-done })
	return p
}

const hostile = "rm -rf ~ <script>alert(1)</script> \x1b]0;owned\x07 \u202egnp.exe"

func bashAsk(id serve.AskID) serve.Ask {
	v := hostile
	return serve.Ask{
		Arrived: inbox.Arrived{ID: id, Session: "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b", Request: &wire.Request{
			ID: "r", RequesterSessionID: "child-1", RequesterAgentName: "builder", Value: &v, Surface: ptr("bash"),
			AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{hostile, "second value"}, RequesterCwd: "/w/project",
				Principal: wire.Principal{SessionID: "child-1", AgentName: "builder"}},
		}},
		Verdict: resolve.Verdict{Action: resolve.Ask, Surface: "bash", Explanation: "No rule decides bash for agent builder; the default is ask."},
	}
}

func writeAsk(id serve.AskID) serve.Ask {
	a := bashAsk(id)
	path := "/w/project/a.txt"
	a.Request.AccessIntent = &wire.AccessIntent{Surface: "path_write", MatchValues: []string{path}, BoundaryValue: &path, RequesterCwd: "/w/project",
		Principal: wire.Principal{SessionID: "child-1", AgentName: "builder"}}
	a.Request.Payload = &wire.Payload{Kind: "path", Request: wire.PayloadRequest{Surface: "path_write", ToolName: ptr("write"), Value: path},
		Evidence: []wire.Evidence{{Label: "input", Text: `{"path":"/w/project/a.txt","content":"new line\n"}`}}}
	return a
}

func ptr(s string) *string { return &s }

// queue shows the page an ask waiting for a person and returns its link.
func (p *page) queue(a serve.Ask) string {
	p.events <- serve.AskQueued{Ask: a}
	p.events <- serve.Serving{} // the ask is registered once this is taken
	return p.s.Link(a.ID)
}

func (p *page) get(link string) (int, string) {
	p.t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var hidden = regexp.MustCompile(`name="(form|shown)" value="([^"]*)"`)

// form reads the hidden fields of a page.
func form(body string) url.Values {
	v := url.Values{}
	for _, m := range hidden.FindAllStringSubmatch(body, 2) {
		v.Set(m[1], m[2])
	}
	return v
}

// post sends a form as the page's own browser would (same origin).
func (p *page) post(link string, v url.Values, header map[string]string) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, link, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", p.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, val := range header {
		if val == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, val)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func with(v url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = vs
	}
	for i := 0; i < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// The page shows what the console's detail shows — agent, session, cwd,
// every value, why — every string escaped, under a strict CSP.
func TestThePageDisclosesTheAsk(t *testing.T) {
	p := newPage(t)
	link := p.queue(bashAsk(1))
	if !strings.HasPrefix(link, p.srv.URL+"/a/") || len(link) < len(p.srv.URL)+40 {
		t.Fatalf("link %q", link)
	}
	code, body := p.get(link)
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, body)
	}
	for _, want := range []string{"builder", "child-1", "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b", "/w/project", "second value",
		"No rule decides bash for agent builder", "&lt;script&gt;alert(1)&lt;/script&gt;", "Approve once", "Deny with this reason"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "\x1b", "\x07", "\u202e", "approve for session"} {
		if strings.Contains(body, bad) {
			t.Errorf("page has %q", bad)
		}
	}
	resp, _ := http.Get(link)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "form-action 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", resp.Header)
	}
}

// A write ask's page shows its diff against the file as it is now.
func TestThePageShowsTheDiffOfAWrite(t *testing.T) {
	p := newPage(t)
	_, body := p.get(p.queue(writeAsk(1)))
	for _, want := range []string{"- old line", "&#43; new line", "<dt>change</dt>", "against the file as it is now"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
}

// A write asked on another host (over the hub) is not diffed against the
// file at that path here: the page says where the file is.
func TestThePageDoesNotDiffAFileOnAnotherHost(t *testing.T) {
	p := newPage(t)
	a := writeAsk(2)
	a.Host = "alpha"
	_, body := p.get(p.queue(a))
	if !strings.Contains(body, "the file is on host alpha") || strings.Contains(body, "- old line") {
		t.Errorf("page of a write on alpha:\n%s", body)
	}
}

// Approve once goes to the decision path with the approver web and the
// link's id; the same link is refused afterwards, for a post (a replay)
// and a page alike.
func TestApproveOnceThenTheLinkIsSpent(t *testing.T) {
	p := newPage(t)
	link := p.queue(bashAsk(7))
	_, body := p.get(link)
	f := form(body)
	if code, body := p.post(link, with(f, "decision", "approve"), nil); code != http.StatusOK || !strings.Contains(body, "Approved once") {
		t.Fatalf("approve: %d %s", code, body)
	}
	got := p.dec.decisions()
	if len(got) != 1 || got[0].Ask != 7 || got[0].State != wire.StateApproved || !strings.HasPrefix(got[0].Approver, ApproverPrefix) ||
		len(got[0].Approver) != len(ApproverPrefix)+12 || got[0].Scope != "" {
		t.Fatalf("decisions %+v", got)
	}
	if code, _ := p.post(link, with(f, "decision", "deny"), nil); code != http.StatusGone {
		t.Errorf("second post: %d", code)
	}
	if code, _ := p.get(link); code != http.StatusGone {
		t.Errorf("page after use: %d", code)
	}
	if n := len(p.dec.decisions()); n != 1 {
		t.Fatalf("%d decisions", n)
	}
}

// Deny, and deny with a reason (which needs one).
func TestDenyAndDenyWithAReason(t *testing.T) {
	p := newPage(t)
	l1, l2 := p.queue(bashAsk(1)), p.queue(bashAsk(2))
	_, b1 := p.get(l1)
	if code, body := p.post(l1, with(form(b1), "decision", "deny"), nil); code != http.StatusOK || !strings.Contains(body, "Denied") {
		t.Fatalf("deny: %d %s", code, body)
	}
	_, b2 := p.get(l2)
	if code, _ := p.post(l2, with(form(b2), "decision", "reason", "reason", "  "), nil); code != http.StatusBadRequest {
		t.Errorf("blank reason: %d", code)
	}
	if code, _ := p.post(l2, with(form(b2), "decision", "reason", "reason", "use the staging db"), nil); code != http.StatusOK {
		t.Errorf("reason: %d", code)
	}
	got := p.dec.decisions()
	if len(got) != 2 || got[0].State != wire.StateDenied || got[1].State != wire.StateDeniedWithReason || got[1].Reason != "use the staging db" {
		t.Fatalf("decisions %+v", got)
	}
}

// Every way of reaching a decision other than the page's own form for a
// waiting ask is refused, and nothing is decided.
func TestRefusals(t *testing.T) {
	p := newPage(t)
	link := p.queue(bashAsk(1))
	_, body := p.get(link)
	f := with(form(body), "decision", "approve")
	token := strings.TrimPrefix(link, p.srv.URL+"/a/")
	altered := p.srv.URL + "/a/" + string(token[0]^1) + token[1:]
	other := p.queue(writeAsk(2))
	_, otherBody := p.get(other)

	for _, c := range []struct {
		name   string
		link   string
		form   url.Values
		header map[string]string
		want   int
	}{
		{"altered token", altered, f, nil, http.StatusGone},
		{"guessed token", p.srv.URL + "/a/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", f, nil, http.StatusGone},
		{"cross-site post", link, f, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"cross-site post, Origin only", link, f, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": ""}, http.StatusForbidden},
		{"no form token", link, with(f, "form", ""), nil, http.StatusForbidden},
		{"another link's form token", link, with(f, "form", form(otherBody).Get("form")), nil, http.StatusForbidden},
		{"the form of another ask", link, with(f, "shown", form(otherBody).Get("shown")), nil, http.StatusConflict},
		{"no decision", link, with(f, "decision", ""), nil, http.StatusBadRequest},
		{"a session grant", link, with(f, "decision", "session"), nil, http.StatusBadRequest},
		{"another host name", link, f, map[string]string{"Host": "rebound.example"}, http.StatusMisdirectedRequest},
	} {
		req := c.header
		if host := req["Host"]; host != "" {
			r, _ := http.NewRequest(http.MethodPost, c.link, strings.NewReader(c.form.Encode()))
			r.Host = host
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
			}
			continue
		}
		if code, body := p.post(c.link, c.form, c.header); code != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, code, c.want, body)
		}
	}
	if got := p.dec.decisions(); len(got) != 0 {
		t.Fatalf("decided %+v", got)
	}
	// The page still works for its own form afterwards.
	if code, _ := p.post(link, f, nil); code != http.StatusOK {
		t.Fatalf("own form: %d", code)
	}
}

// An ask decided at the console, withdrawn by its child, or whose diff
// changed since the page was shown, is not decided from the page.
func TestAnAskDecidedElsewhereWithdrawnOrChangedIsRefused(t *testing.T) {
	p := newPage(t)
	decided, withdrawn, changed := p.queue(bashAsk(1)), p.queue(bashAsk(2)), p.queue(writeAsk(3))
	forms := map[string]url.Values{}
	for _, l := range []string{decided, withdrawn, changed} {
		_, body := p.get(l)
		forms[l] = with(form(body), "decision", "approve")
	}
	p.events <- serve.Decided{Ask: bashAsk(1), Queued: true, Response: wire.Response{Approved: false, State: wire.StateDenied}}
	p.events <- serve.Withdrawn{Withdrawn: inbox.Withdrawn{ID: 2}, Pending: true}
	p.events <- serve.Serving{}
	p.file = "someone changed the file\n"
	for l, want := range map[string]int{decided: http.StatusGone, withdrawn: http.StatusGone, changed: http.StatusConflict} {
		if code, body := p.post(l, forms[l], nil); code != want {
			t.Errorf("%d, want %d: %s", code, want, body)
		}
	}
	if got := p.dec.decisions(); len(got) != 0 {
		t.Fatalf("decided %+v", got)
	}
	if code, _ := p.get(decided); code != http.StatusGone {
		t.Errorf("page of a decided ask: %d", code)
	}
}

// An answer the decision path refuses (the ask was answered a moment
// before) is reported as gone, and the link is spent.
func TestARaceWithTheConsoleIsReported(t *testing.T) {
	p := newPage(t)
	p.dec.errs = serve.ErrAlreadyDecided
	link := p.queue(bashAsk(1))
	_, body := p.get(link)
	if code, _ := p.post(link, with(form(body), "decision", "approve"), nil); code != http.StatusGone {
		t.Fatalf("%d", code)
	}
	p.dec.errs = errors.New("audit log unwritable")
	link = p.queue(bashAsk(2))
	_, body = p.get(link)
	if code, body := p.post(link, with(form(body), "decision", "approve"), nil); code != http.StatusServiceUnavailable || !strings.Contains(body, "audit log unwritable") {
		t.Fatalf("%d %s", code, body)
	}
	// Nothing was decided: the same link decides once the server can.
	p.dec.errs = nil
	if code, body := p.post(link, with(form(body), "decision", "approve"), nil); code != http.StatusOK {
		t.Fatalf("the link after a decision not taken: %d %s", code, body)
	}
	if got := p.dec.decisions(); len(got) != 3 || got[2].Ask != 2 || got[2].State != wire.StateApproved {
		t.Fatalf("decisions %+v, want the retry of ask 2 last", got)
	}
}

// A base URL without a host would make links no phone can open.
func TestABaseURLNeedsAHost(t *testing.T) {
	for _, base := range []string{"", "/approve", "http://"} {
		if _, err := New(Options{BaseURL: base}); err == nil || !strings.Contains(err.Error(), "names no host") {
			t.Errorf("%q: %v", base, err)
		}
	}
}

// A browser drops the default port and may change the host's case: a
// --web-url of https://Box.Example:443 answers Host box.example, and still
// refuses another host or port.
func TestHostIsComparedNormalised(t *testing.T) {
	for _, c := range []struct {
		base, host string
		ok         bool
	}{
		{"https://Box.Example:443", "box.example", true},
		{"https://box.example", "BOX.example:443", true},
		{"http://box.example:80", "box.example", true},
		{"http://box.example", "box.example:80", true},
		{"https://box.example:8443", "box.example:8443", true},
		{"https://box.example:443", "box.example:8443", false},
		{"https://box.example", "box.example:80", false},
		{"http://box.example", "box.example:443", false},
		{"https://box.example", "evil.example", false},
		{"https://[::1]:443", "[::1]", true},
		{"https://[::1]:8443", "[::1]", false},
	} {
		s, err := New(Options{Decider: &decider{}, BaseURL: c.base})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/a/unknown", nil)
		r.Host = c.host
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		if refused := w.Code == http.StatusMisdirectedRequest; refused == c.ok {
			t.Errorf("--web-url %s, Host %s: %d", c.base, c.host, w.Code)
		}
	}
}

// Pages and posts on one link at once: one decision, and (under -race) no
// unguarded read of the link's state.
func TestConcurrentRequestsOnOneLinkDecideOnce(t *testing.T) {
	p := newPage(t)
	link := p.queue(bashAsk(3))
	_, body := p.get(link)
	f := with(form(body), "decision", "approve")
	var wg sync.WaitGroup
	var mu sync.Mutex
	approved := 0
	for range 8 {
		wg.Go(func() {
			resp, err := http.Get(link)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
		wg.Go(func() {
			resp, err := http.PostForm(link, f)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				mu.Lock()
				approved++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n := len(p.dec.decisions()); n != 1 || approved != 1 {
		t.Fatalf("%d decisions, %d approved answers", n, approved)
	}
}
