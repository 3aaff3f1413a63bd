package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/testkit"
)

// chromiumPath is Debian's chromium package; CI installs it for this test.
const chromiumPath = "/usr/bin/chromium"

// The approve page in a real browser at phone width: the link from the
// notification shows the disclosure, a tap on Approve once answers the
// child approved with the audit naming the page, and the link opened again
// is refused. The screenshots are kept as artifacts (go test -artifacts).
func TestApprovePageInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("%s is absent (Debian package chromium): the approve page is not tried in a real browser", chromiumPath)
	}
	f := startApproveFixture(t, "make <b>deploy</b> && echo \x1b[31mred")
	page := openChromium(t)
	page.call("Page.enable", nil)
	page.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true})

	page.navigate(f.link)
	html := page.html()
	for _, want := range []string{"builder", "make &lt;b&gt;deploy&lt;/b&gt;", "/w", "Approve once", "Deny with this reason"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q:\n%s", want, html)
		}
	}
	if strings.Contains(html, "<b>deploy") || strings.Contains(html, "\x1b") {
		t.Errorf("the command's markup or escape reached the page:\n%s", html)
	}
	page.screenshot("approve-page-390.png")

	page.tap("button.approve")
	page.waitLoad()
	if html := page.html(); !strings.Contains(html, "Approved once") {
		t.Fatalf("after Approve once:\n%s", html)
	}
	page.screenshot("approve-page-approved-390.png")
	page.navigate(f.link)
	if html := page.html(); !strings.Contains(html, "No ask waits at this link") {
		t.Fatalf("the link opened again:\n%s", html)
	}
	f.approved(t)
}

// cdpPage drives one Chromium tab over the DevTools protocol, through a
// minimal WebSocket client (the module has no WebSocket dependency).
type cdpPage struct {
	t      *testing.T
	conn   net.Conn
	r      *bufio.Reader
	id     int
	loaded bool // a Page.loadEventFired arrived
}

func openChromium(t *testing.T) *cdpPage {
	t.Helper()
	cmd := exec.Command(chromiumPath, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--remote-debugging-port=0", "--user-data-dir="+t.TempDir(), "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Chromium's helper processes write to the profile too: all of them
	// go before the profile directory is removed.
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		for deadline := time.Now().Add(testkit.WaitLimit); syscall.Kill(-cmd.Process.Pid, 0) == nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	})
	listening := regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)
	sc := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("chromium did not say where DevTools listens")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	resp, err := http.Get("http://" + addr + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			return dialPage(t, tg.WebSocketDebuggerURL)
		}
	}
	t.Fatalf("no page target in %+v", targets)
	return nil
}

// dialPage makes the WebSocket handshake (RFC 6455) to a page target.
func dialPage(t *testing.T, wsURL string) *cdpPage {
	t.Helper()
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		u.RequestURI(), u.Host, base64.StdEncoding.EncodeToString(key))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("websocket handshake: %v %v", resp, err)
	}
	_ = conn.SetDeadline(time.Now().Add(testkit.WaitLimit))
	return &cdpPage{t: t, conn: conn, r: r}
}

// write sends one masked text frame, as a client must.
func (p *cdpPage) write(data []byte) {
	hdr := []byte{0x81}
	switch n := len(data); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	masked := make([]byte, len(data))
	for i, b := range data {
		masked[i] = b ^ mask[i%4]
	}
	if _, err := p.conn.Write(append(append(hdr, mask...), masked...)); err != nil {
		p.t.Fatal(err)
	}
}

// read returns the next whole message, joining continuation frames.
func (p *cdpPage) read() []byte {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(p.r, h[:]); err != nil {
			p.t.Fatal(err)
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			_, _ = io.ReadFull(p.r, b[:])
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			_, _ = io.ReadFull(p.r, b[:])
			n = binary.BigEndian.Uint64(b[:])
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(p.r, payload); err != nil {
			p.t.Fatal(err)
		}
		msg = append(msg, payload...)
		if h[0]&0x80 != 0 {
			return msg
		}
	}
}

// call sends a command and returns its result, noting page loads seen
// meanwhile.
func (p *cdpPage) call(method string, params any) json.RawMessage {
	p.t.Helper()
	p.id++
	data, _ := json.Marshal(map[string]any{"id": p.id, "method": method, "params": params})
	p.write(data)
	for {
		var m struct {
			ID     int
			Method string
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(p.read(), &m); err != nil {
			p.t.Fatal(err)
		}
		if m.Method == "Page.loadEventFired" {
			p.loaded = true
		}
		if m.ID == p.id {
			if m.Error != nil {
				p.t.Fatalf("%s: %s", method, m.Error.Message)
			}
			return m.Result
		}
	}
}

// waitLoad waits for the next page load.
func (p *cdpPage) waitLoad() {
	p.t.Helper()
	for !p.loaded {
		var m struct{ Method string }
		_ = json.Unmarshal(p.read(), &m)
		p.loaded = m.Method == "Page.loadEventFired"
	}
	p.loaded = false
}

func (p *cdpPage) navigate(link string) {
	p.loaded = false
	p.call("Page.navigate", map[string]any{"url": link})
	p.waitLoad()
}

func (p *cdpPage) root() int {
	var doc struct{ Root struct{ NodeID int } }
	_ = json.Unmarshal(p.call("DOM.getDocument", nil), &doc)
	return doc.Root.NodeID
}

// html is the page's markup as the browser holds it.
func (p *cdpPage) html() string {
	var out struct{ OuterHTML string }
	_ = json.Unmarshal(p.call("DOM.getOuterHTML", map[string]any{"nodeId": p.root()}), &out)
	return out.OuterHTML
}

// tap presses and releases the mouse in the middle of the element, as a
// finger would: no script of the test's runs in the page.
func (p *cdpPage) tap(selector string) {
	p.t.Helper()
	var q struct{ NodeID int }
	_ = json.Unmarshal(p.call("DOM.querySelector", map[string]any{"nodeId": p.root(), "selector": selector}), &q)
	if q.NodeID == 0 {
		p.t.Fatalf("no %s on the page", selector)
	}
	p.call("DOM.scrollIntoViewIfNeeded", map[string]any{"nodeId": q.NodeID})
	var box struct{ Model struct{ Content []float64 } }
	_ = json.Unmarshal(p.call("DOM.getBoxModel", map[string]any{"nodeId": q.NodeID}), &box)
	c := box.Model.Content
	x, y := (c[0]+c[2])/2, (c[1]+c[5])/2
	p.loaded = false
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		p.call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1})
	}
}

// screenshot keeps the whole page, at the viewport's width, as a PNG
// artifact.
func (p *cdpPage) screenshot(name string) {
	p.t.Helper()
	var m struct {
		CSSContentSize struct{ Width, Height float64 }
	}
	_ = json.Unmarshal(p.call("Page.getLayoutMetrics", nil), &m)
	clip := map[string]any{"x": 0, "y": 0, "width": m.CSSContentSize.Width, "height": m.CSSContentSize.Height, "scale": 1}
	var shot struct{ Data string }
	_ = json.Unmarshal(p.call("Page.captureScreenshot", map[string]any{"format": "png", "clip": clip, "captureBeyondViewport": true}), &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) == 0 {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(p.t.ArtifactDir(), name), png, 0o600); err != nil {
		p.t.Fatal(err)
	}
}
