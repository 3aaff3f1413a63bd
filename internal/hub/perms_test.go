package hub

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// permRow is one row of docs/hub.md's permissions table.
type permRow struct {
	subject, kind string
	relay, appr   bool
}

// readPermsTable reads the rows of the table headed "subject tried".
func readPermsTable(t *testing.T) []permRow {
	t.Helper()
	f, err := os.Open("../../docs/hub.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []permRow
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "| subject tried |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "| ---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 4 {
			t.Fatalf("row %q", line)
		}
		yes := func(c string) bool {
			if c != "yes" && c != "no" {
				t.Fatalf("row %q: %q", line, c)
			}
			return c == "yes"
		}
		rows = append(rows, permRow{subject: strings.Trim(cells[0], "`"), kind: cells[1], relay: yes(cells[2]), appr: yes(cells[3])})
	}
	if len(rows) == 0 {
		t.Fatal("no permissions table in docs/hub.md")
	}
	return rows
}

// connectAsConn connects with the credentials h issued to a role's name.
func connectAsConn(t *testing.T, h *Hub, role, name string) *nats.Conn {
	t.Helper()
	c, err := ReadCreds(h.CredsFile(role, name))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(h.URL(), c, role, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// allowed tries a row's subject on nc and reports whether the server let
// it through. The server reports a violation before it answers the
// flush's ping, and the connection records it as its last error before
// the flush returns, so nothing waits for time. Each row's subject and kind
// differ from the row before, so an older error never matches.
func allowed(t *testing.T, nc *nats.Conn, row permRow) bool {
	t.Helper()
	var what string
	switch row.kind {
	case "publish":
		what = "publish to"
		if err := nc.Publish(row.subject, nil); err != nil {
			t.Fatal(err)
		}
	case "subscribe":
		what = "subscription to"
		sub, err := nc.SubscribeSync(row.subject)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	default:
		t.Fatalf("kind %q", row.kind)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	last := nc.LastError()
	return last == nil || !strings.Contains(strings.ToLower(last.Error()), strings.ToLower(what+` "`+row.subject+`"`))
}

// Every row of the permissions table in docs/hub.md is what the server
// enforces for each role (issue 20: approvers could delete, retarget or
// drain a relay's consumer; relays could make unlimited consumers).
func TestRolePermissionsTable(t *testing.T) {
	cfg := testConfig(t)
	cfg.Relays = []string{"alpha", "beta"}
	h := started(t, cfg)
	relay := connectAsConn(t, h, RoleRelay, "alpha")
	appr := connectAsConn(t, h, RoleApprover, "ann")
	for _, row := range readPermsTable(t) {
		if got := allowed(t, relay, row); got != row.relay {
			t.Errorf("relay alpha, %s %s: allowed %v, the table says %v", row.kind, row.subject, got, row.relay)
		}
		if got := allowed(t, appr, row); got != row.appr {
			t.Errorf("approver, %s %s: allowed %v, the table says %v", row.kind, row.subject, got, row.appr)
		}
	}
}
