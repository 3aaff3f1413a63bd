package relay

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/hub"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// testCluster is three nats-server nodes in process, configured as
// docs/hub.md's recipe says.
type testCluster struct {
	t        *testing.T
	dir      string
	confs    [3]string
	ports    [3]int
	nodes    [3]*server.Server
	password string
}

// recipeNode reads node 1's configuration from docs/hub.md.
func recipeNode(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testkit.ModuleRoot(t), "docs", "hub.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "<!-- cluster-recipe -->")
	if !ok {
		t.Fatal("docs/hub.md has no cluster recipe")
	}
	_, after, _ = strings.Cut(after, "```text\n")
	conf, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatal("the cluster recipe has no end")
	}
	var lines []string
	for _, l := range strings.Split(conf, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "   "))
	}
	return strings.Join(lines, "\n")
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// startCluster follows steps 1–4 of the recipe.
func startCluster(t *testing.T, relays, approvers []string) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir(), password: "test-admin-password"}
	t.Setenv("PERMTUI_ADMIN_PASSWORD", c.password)
	accounts, err := hub.AccountsConfig(filepath.Join(c.dir, "permtui-creds"), relays, approvers)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(c.dir, "permtui-accounts.conf"), []byte(accounts))
	node := recipeNode(t)
	ports := freePorts(t, 6)
	for i := range 3 {
		c.ports[i] = ports[i]
		// Node i+1 as step 2 says, on free ports.
		conf := strings.NewReplacer(
			"nats-1", "nats-"+strconv.Itoa(i+1),
			"/var/lib/nats", filepath.Join(c.dir, "store"),
			"127.0.0.1:4222", "127.0.0.1:"+strconv.Itoa(ports[i]),
			"listen: 127.0.0.1:6222", "listen: 127.0.0.1:"+strconv.Itoa(ports[3+i]),
			"nats-route://127.0.0.1:6222", "nats-route://127.0.0.1:"+strconv.Itoa(ports[3]),
			"nats-route://127.0.0.1:6223", "nats-route://127.0.0.1:"+strconv.Itoa(ports[4]),
			"nats-route://127.0.0.1:6224", "nats-route://127.0.0.1:"+strconv.Itoa(ports[5]),
		).Replace(node)
		c.confs[i] = filepath.Join(c.dir, "nats-"+strconv.Itoa(i+1)+".conf")
		testkit.WriteFile(t, c.confs[i], []byte(conf))
	}
	for i := range 3 {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range 3 {
			c.stop(i)
		}
	})
	nc := c.admin()
	// Right after the nodes start, as the recipe does: Provision waits for
	// the cluster to elect its JetStream leader.
	ctx, cancel := context.WithTimeout(context.Background(), formation)
	defer cancel()
	if err := hub.Provision(ctx, nc, 0, 3); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *testCluster) start(i int) {
	c.t.Helper()
	opts, err := server.ProcessConfigFile(c.confs[i])
	if err != nil {
		c.t.Fatal(err)
	}
	opts.NoSigs, opts.NoLog = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		c.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(testkit.WaitLimit) {
		c.t.Fatalf("node %d did not start", i+1)
	}
	c.nodes[i] = s
}

func (c *testCluster) stop(i int) {
	if c.nodes[i] != nil {
		c.nodes[i].Shutdown()
		c.nodes[i].WaitForShutdown()
		c.nodes[i] = nil
	}
}

func (c *testCluster) url() string {
	var urls []string
	for _, p := range c.ports {
		urls = append(urls, "nats://127.0.0.1:"+strconv.Itoa(p))
	}
	return strings.Join(urls, ",")
}

func (c *testCluster) creds(role, name string) hub.Creds {
	c.t.Helper()
	cr, err := hub.ReadCreds(filepath.Join(c.dir, "permtui-creds", role+"-"+name+".creds"))
	if err != nil {
		c.t.Fatal(err)
	}
	return cr
}

func (c *testCluster) admin() *nats.Conn {
	c.t.Helper()
	nc, err := nats.Connect(c.url(), nats.UserInfo("admin", c.password), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// waitUntil checks cond until it holds, for at most the wait limit.
func (c *testCluster) waitUntil(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(testkit.WaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("not %s within %v", what, testkit.WaitLimit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// formation bounds the wait for three nodes to elect their JetStream
// leader, which under the race detector on a loaded machine took over 20 s.
const formation = time.Minute

// leader is the index of the node leading stream.
func (c *testCluster) leader(js jetstream.JetStream, stream string) int {
	c.t.Helper()
	var at int
	c.waitUntil(stream+" led", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, stream)
		if err != nil || st.CachedInfo().Cluster == nil {
			return false
		}
		name := st.CachedInfo().Cluster.Leader
		for i, n := range c.nodes {
			if n != nil && n.Name() == name {
				at = i
				return true
			}
		}
		return false
	})
	return at
}

// explain says where an unanswered ask of tr is at the hub.
func (c *testCluster) explain(js jetstream.JetStream, tr *testRelay, req *wire.Request) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	host := tr.host
	queued := tr.events.Filter(func(ev serve.Event) bool {
		q, ok := ev.(serve.AskQueued)
		return ok && q.Ask.Request.ID == req.ID
	})
	if len(queued) == 0 {
		return "not queued by its relay"
	}
	key := askKey(queued[0].(serve.AskQueued).Ask)
	var out []string
	if st, err := js.Stream(ctx, hub.AsksStream); err == nil {
		_, err := st.GetLastMsgForSubject(ctx, hub.AskSubject(host, key))
		out = append(out, fmt.Sprintf("ask in stream: %v", err))
		_, err = st.GetLastMsgForSubject(ctx, hub.GoneSubject(host, key))
		out = append(out, fmt.Sprintf("gone in stream: %v", err))
	}
	if kv, err := js.KeyValue(ctx, hub.DecisionsBucket); err == nil {
		e, err := kv.Get(ctx, hub.DecisionKey(host, key))
		if err == nil {
			out = append(out, fmt.Sprintf("decision rev %d %s", e.Revision(), e.Value()))
		} else {
			out = append(out, fmt.Sprintf("decision: %v", err))
		}
	}
	if cons, err := js.Consumer(ctx, hub.DecisionsStream, hub.RelayConsumer(host)); err == nil {
		ci := cons.CachedInfo()
		out = append(out, fmt.Sprintf("consumer delivered %+v ackfloor %+v pending %d ackpending %d redelivered %d waiting %d leader %v",
			ci.Delivered, ci.AckFloor, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting, ci.Cluster))
	} else {
		out = append(out, fmt.Sprintf("consumer: %v", err))
	}
	return strings.Join(out, "; ")
}

// healthy: every stream has a leader and two current followers.
func (c *testCluster) healthy(js jetstream.JetStream) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, name := range []string{hub.AsksStream, hub.DecisionsStream, hub.GrantsStream} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			return false
		}
		cl := st.CachedInfo().Cluster
		if cl == nil || cl.Leader == "" || len(cl.Replicas) != 2 {
			return false
		}
		for _, r := range cl.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
	}
	return true
}

// The recipe in docs/hub.md, followed in process: three nodes, streams
// with 3 replicas, two relays and two headless approvers racing. The
// leader of each stream is stopped in turn while asks are in flight, then
// a follower, each restarted before the next: every child is answered and
// each relay's audit log holds each of its asks once (issue 20: killing the
// decisions stream's leader lost 11-140 of 200 asks in half the runs).
func TestClusterRecipe(t *testing.T) {
	relays, approvers := []string{"alpha", "beta"}, []string{"ann", "bob"}
	c := startCluster(t, relays, approvers)
	js, err := jetstream.New(c.admin())
	if err != nil {
		t.Fatal(err)
	}
	var trs []*testRelay
	for _, h := range relays {
		trs = append(trs, newRelay(t, c, h))
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, tr := range trs {
				t.Logf("%s's log: %q", tr.host, tr.logs.Snapshot())
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	racers := raceHeadless(t, ctx, c, approvers...)

	const perPhase = 10
	n := 0
	phases := []string{hub.AsksStream, hub.DecisionsStream, hub.GrantsStream, "follower"}
	for _, phase := range phases {
		var results []<-chan pichild.Result
		var reqs []*wire.Request
		victim := -1
		for i := range perPhase {
			for _, tr := range trs {
				req := bash(tr.host, n+i, fmt.Sprintf("make step%d", n+i))
				reqs = append(reqs, req)
				results = append(results, tr.ask(req))
			}
			if i == perPhase/2 {
				if phase == "follower" {
					victim = (c.leader(js, hub.DecisionsStream) + 1) % 3
				} else {
					victim = c.leader(js, phase)
				}
				c.stop(victim)
			}
		}
		n += perPhase
		for i, r := range results {
			select {
			case res := <-r:
				if res.Outcome != pichild.Answered || res.Response.Approved {
					t.Fatalf("%s: %+v", phase, res)
				}
			case <-time.After(testkit.WaitLimit):
				t.Fatalf("%s: ask %d of the phase unanswered (node %d stopped): %s", phase, i, victim+1, c.explain(js, trs[i%len(trs)], reqs[i]))
			}
		}
		c.start(victim)
		c.waitUntil("healthy after "+phase, func() bool { return c.healthy(js) })
	}
	cancel()
	racers.Wait()
	for _, tr := range trs {
		seen := map[string]bool{}
		for _, rec := range tr.audit() {
			if seen[rec.RequestID] {
				t.Fatalf("%s: %s decided twice", tr.host, rec.RequestID)
			}
			seen[rec.RequestID] = true
		}
		if len(seen) != n {
			t.Fatalf("%s: %d asks audited, want %d", tr.host, len(seen), n)
		}
	}
}
