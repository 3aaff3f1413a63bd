package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// started runs a hub of cfg until the test ends.
func started(t *testing.T, cfg Config) *Hub {
	t.Helper()
	h, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Shutdown)
	return h
}

// connectAs opens a JetStream context with the credentials h issued to a
// role's name.
func connectAs(t *testing.T, h *Hub, role, name string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(connectAsConn(t, h, role, name))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// The first decision for an ask is the only one, whatever a holder of
// approver credentials sends: the server refuses a second value, an
// update, a delete, a purge and a rollup (issue 20: ann created a
// decision, bob put his own over it and the child got bob's).
func TestOneDecisionPerAskEnforcedByTheServer(t *testing.T) {
	cfg := testConfig(t)
	cfg.Approvers = []string{"ann", "bob"}
	h := started(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	ann, bob := connectAs(t, h, RoleApprover, "ann"), connectAs(t, h, RoleApprover, "bob")
	annKV, err := ann.KeyValue(ctx, DecisionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	bobKV, err := bob.KeyValue(ctx, DecisionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := DecisionKey("alpha", "0123456789abcdef0123456789abcdef")
	rev, err := annKV.Create(ctx, key, []byte(`{"approver":"ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	attempts := map[string]func() error{
		"create": func() error { _, err := bobKV.Create(short(), key, []byte(`{"approver":"bob"}`)); return err },
		"put":    func() error { _, err := bobKV.Put(short(), key, []byte(`{"approver":"bob"}`)); return err },
		"update": func() error { _, err := bobKV.Update(short(), key, []byte(`{"approver":"bob"}`), rev); return err },
		"delete": func() error { return bobKV.Delete(short(), key) },
		"purge":  func() error { return bobKV.Purge(short(), key) },
		"rollup": func() error {
			m := nats.NewMsg(DecisionSubjectPrefix + key)
			m.Header.Set("Nats-Rollup", "all")
			m.Data = []byte(`{"approver":"bob"}`)
			_, err := bob.PublishMsg(short(), m)
			return err
		},
		"publish": func() error {
			_, err := bob.Publish(short(), DecisionSubjectPrefix+key, []byte(`{"approver":"bob"}`))
			return err
		},
	}
	for name, try := range attempts {
		// A write the permissions refuse is never acknowledged: it times out.
		if err := try(); err == nil {
			t.Errorf("%s over ann's decision was accepted", name)
		}
		e, err := annKV.Get(ctx, key)
		if err != nil || e.Revision() != rev || string(e.Value()) != `{"approver":"ann"}` {
			t.Fatalf("after %s: %v %v", name, e, err)
		}
	}
	// A rollup on another subject would wipe every undelivered decision.
	other := DecisionKey("alpha", "fedcba9876543210fedcba9876543210")
	m := nats.NewMsg(DecisionSubjectPrefix + other)
	m.Header.Set("Nats-Rollup", "all")
	m.Data = []byte(`{}`)
	if _, err := bob.PublishMsg(ctx, m); err == nil {
		t.Error("a rollup was accepted")
	}
	if _, err := annKV.Get(ctx, key); err != nil {
		t.Fatalf("ann's decision is gone: %v", err)
	}
	st, err := ann.Stream(ctx, DecisionsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(short(), rev); err == nil {
		t.Error("an approver deleted a decision message")
	}
	if err := st.Purge(short()); err == nil {
		t.Error("an approver purged the decisions")
	}
	if _, err := annKV.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal("ann's decision was removed")
	}
}

// An ask's message id names its relay's run (docs/hub.md, decision 0245):
// a retry in the same run is stored once, while the same ask from a
// restarted relay is stored again, so consoles that closed it see it anew.
func TestAnAsksMessageIDDeduplicatesWithinOneRelayRun(t *testing.T) {
	h := started(t, testConfig(t))
	js := connectAs(t, h, RoleRelay, "alpha")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject := AskSubject("alpha", "k1")
	publish := func(run string) *jetstream.PubAck {
		t.Helper()
		ack, err := js.Publish(ctx, subject, []byte(`{}`), jetstream.WithMsgID(MsgID("ask", "alpha", "k1", 1, run)))
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	first := publish("run1")
	if retry := publish("run1"); !retry.Duplicate || retry.Sequence != first.Sequence {
		t.Fatalf("a retry in the same run was stored again: %+v after %+v", retry, first)
	}
	if next := publish("run2"); next.Duplicate || next.Sequence <= first.Sequence {
		t.Fatalf("a restarted relay's ask was taken as a duplicate: %+v after %+v", next, first)
	}
}
