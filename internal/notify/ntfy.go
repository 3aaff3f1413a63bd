package notify

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/permtui/permtui/internal/loopback"
	"github.com/permtui/permtui/internal/status"
	"github.com/permtui/permtui/internal/termsafe"
)

// ntfyMessage is ntfy's JSON publish body (https://docs.ntfy.sh/publish/#publish-as-json).
type ntfyMessage struct {
	Topic    string       `json:"topic"`
	Title    string       `json:"title"`
	Message  string       `json:"message"`
	Priority int          `json:"priority"`
	Tags     []string     `json:"tags,omitempty"`
	Click    string       `json:"click,omitempty"`
	Actions  []ntfyAction `json:"actions,omitempty"`
}

type ntfyAction struct {
	Action string `json:"action"` // view: the phone opens the URL
	Label  string `json:"label"`
	URL    string `json:"url"`
}

// ntfy priorities.
const (
	priorityHigh = 4
	priorityMax  = 5
)

// ntfyQueue bounds the messages waiting for the poster; more are refused,
// for the rate to count.
const ntfyQueue = 64

// ntfy posts to one topic from one goroutine.
type ntfy struct {
	o      Options
	server string // the publish URL: the topic URL without its topic
	topic  string
	out    chan ntfyMessage
	posts  sync.WaitGroup
}

// ntfyTopic splits a topic URL into the publish URL and the topic. Plain
// http is for a server on this machine only, as for the approve page.
func ntfyTopic(topicURL string) (server, topic string, err error) {
	u, err := url.Parse(topicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || path.Base(u.Path) == "/" || path.Base(u.Path) == "." {
		return "", "", fmt.Errorf("--ntfy wants a topic URL such as https://ntfy.sh/mytopic, not %q", topicURL)
	}
	if u.Scheme == "http" && !loopback.Host(u.Hostname()) {
		return "", "", fmt.Errorf("--ntfy %q: plain http off this machine would show the token and the approve links to the network; use https", topicURL)
	}
	topic = path.Base(u.Path)
	u.Path = strings.TrimSuffix(u.Path, topic)
	return u.String(), topic, nil
}

func newNtfy(o Options, ready func()) (*ntfy, error) {
	server, topic, err := ntfyTopic(o.Ntfy)
	if err != nil {
		return nil, err
	}
	n := &ntfy{o: o, server: server, topic: topic, out: make(chan ntfyMessage, ntfyQueue)}
	n.posts.Go(func() {
		for m := range n.out {
			n.post(m)
			ready()
		}
	})
	return n, nil
}

func (n *ntfy) deliver(l status.Line) bool {
	m := n.message(l)
	select {
	case n.out <- m:
		return true
	default:
		n.o.Logger.Warn("ntfy poster behind: the ask is counted into the next message", "ask", l.Ask)
		return false
	}
}

// wait does not wait for the queue: the poster takes it on, and a count
// it has no room for at exit is logged.
func (n *ntfy) wait() {}

func (n *ntfy) close() {
	close(n.out)
	n.posts.Wait()
}

func (n *ntfy) message(l status.Line) ntfyMessage {
	m := ntfyMessage{Topic: n.topic, Priority: priorityHigh, Tags: []string{"lock"}}
	if l.Event == status.More {
		m.Title = fmt.Sprintf("permtui: %d more asks", l.More)
		m.Message = fmt.Sprintf("%d more asks arrived faster than one message each · %d waiting", l.More, l.Waiting)
		return m
	}
	agent := cmp.Or(l.Agent, "an agent")
	if termsafe.Lookalike(l.Agent) { // marked as the console marks it (decision 0205)
		agent = "⚠" + termsafe.Blanks(l.Agent)
	}
	m.Title = fmt.Sprintf("permtui: %s is waiting", agent)
	if l.Event == status.Expiring {
		m.Title = fmt.Sprintf("permtui: %s's ask expires soon", agent)
		m.Priority, m.Tags = priorityMax, []string{"hourglass"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s ask · session %s", cmp.Or(l.Surface, "an"), shortID(l.Session))
	if l.Host != "" {
		fmt.Fprintf(&b, " on %s", l.Host)
	}
	fmt.Fprintf(&b, " · %d waiting", l.Waiting)
	if termsafe.NonASCII(l.Agent) {
		fmt.Fprintf(&b, "\n⚠ agent name not plain ASCII: %s", termsafe.CodePoints(l.Agent))
	}
	if l.Value != nil {
		fmt.Fprintf(&b, "\n%s", termsafe.Clip(*l.Value, 300))
	}
	if l.Cwd != "" {
		fmt.Fprintf(&b, "\nin %s", termsafe.Clip(l.Cwd, 200))
	}
	m.Message = b.String()
	if l.Link != "" {
		m.Click = l.Link
		m.Actions = []ntfyAction{{Action: "view", Label: "Review", URL: l.Link}}
	}
	return m
}

func (n *ntfy) post(m ntfyMessage) {
	body, err := json.Marshal(m)
	if err != nil {
		n.o.Logger.Warn("ntfy message not encoded", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.server, bytes.NewReader(body))
	if err != nil {
		n.o.Logger.Warn("ntfy post not made", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if n.o.NtfyToken != "" {
		req.Header.Set("Authorization", "Bearer "+n.o.NtfyToken)
	}
	resp, err := n.o.Client.Do(req)
	if err != nil {
		n.o.Logger.Warn("ntfy post failed", "err", err)
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	level := slog.LevelInfo
	if resp.StatusCode/100 != 2 {
		level = slog.LevelWarn
	}
	n.o.Logger.Log(ctx, level, "ntfy post", "status", resp.StatusCode, "title", m.Title)
}

// shortID is a session id's first eight characters, enough to tell
// sessions apart on a lock screen.
func shortID(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}
