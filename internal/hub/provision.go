package hub

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/permtui/permtui/internal/safefs"
)

// Provision creates or updates the stream and buckets permtui uses, each
// with replicas copies (1 for the embedded hub; 3 on a cluster, so that a
// node lost does not stall asks), here or on an existing deployment, and
// reads them back, reporting what differs from what permtui needs: a
// setting the server did not take (an older server without per-subject
// discard), or fewer replicas than asked for. nc stays the caller's.
func Provision(ctx context.Context, nc *nats.Conn, retention time.Duration, replicas int) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if err := awaitJetStream(ctx, js); err != nil {
		return err
	}
	wants := StreamConfigs(retention, replicas)
	for _, cfg := range wants {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("hub: stream %s: %w", cfg.Name, err)
		}
	}
	var problems []string
	for _, want := range wants {
		st, err := js.Stream(ctx, want.Name)
		if err != nil {
			return fmt.Errorf("hub: stream %s: %w", want.Name, err)
		}
		got := st.CachedInfo().Config
		check := func(what string, ok bool) {
			if !ok {
				problems = append(problems, want.Name+": "+what)
			}
		}
		check("replicas "+strconv.Itoa(got.Replicas)+", want "+strconv.Itoa(want.Replicas), got.Replicas == want.Replicas)
		check("one message per subject", got.MaxMsgsPerSubject == want.MaxMsgsPerSubject)
		check("max message size", got.MaxMsgSize == want.MaxMsgSize)
		check("discard new per subject", got.DiscardNewPerSubject == want.DiscardNewPerSubject)
		check("deny delete", got.DenyDelete == want.DenyDelete)
		check("deny purge", got.DenyPurge == want.DenyPurge)
		check("rollup", got.AllowRollup == want.AllowRollup)
	}
	if len(problems) > 0 {
		return fmt.Errorf("hub: the streams differ from what permtui needs: %s", strings.Join(problems, "; "))
	}
	return nil
}

// awaitJetStream waits until the account's JetStream answers: a cluster
// just started answers nothing until it has elected its meta leader, a few
// seconds after its nodes meet, and the recipe provisions right after
// starting the nodes.
func awaitJetStream(ctx context.Context, js jetstream.JetStream) error {
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(try)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hub: JetStream does not answer (a cluster without a meta leader yet, or JetStream not enabled for this account): %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// AccountsConfig issues (or reuses) the credentials of each relay host and
// approver under credsDir, as the embedded hub does, and returns the
// accounts block of a nats-server configuration (docs/hub.md): one account
// with JetStream, an admin user whose password the server reads from the
// environment variable PERMTUI_ADMIN_PASSWORD (for provision), and each
// relay's and approver's public nkey with exactly its role's permissions.
func AccountsConfig(credsDir string, relays, approvers []string) (string, error) {
	if err := safefs.MkdirPrivate(credsDir); err != nil {
		return "", fmt.Errorf("hub: %w", err)
	}
	var b strings.Builder
	b.WriteString("accounts {\n  PERMTUI {\n    jetstream: enabled\n    users: [\n      { user: admin, password: $PERMTUI_ADMIN_PASSWORD }\n")
	err := issueUsers(credsDir, relays, approvers, func(u issuedUser) {
		fmt.Fprintf(&b, "      # %s %s\n      { nkey: %s, permissions: { publish: { allow: %s", u.role, u.name, u.pub, quoteList(u.perms.Publish.Allow))
		if len(u.perms.Publish.Deny) > 0 {
			fmt.Fprintf(&b, ", deny: %s", quoteList(u.perms.Publish.Deny))
		}
		fmt.Fprintf(&b, " }, subscribe: { allow: %s } } }\n", quoteList(u.perms.Subscribe.Allow))
	})
	if err != nil {
		return "", err
	}
	b.WriteString("    ]\n  }\n}\n")
	return b.String(), nil
}

// issuedUser is a relay host or approver with its credentials issued.
type issuedUser struct {
	role, name, pub string
	perms           *server.Permissions
}

// issueUsers issues (or reuses) the credentials of each relay host and
// approver under credsDir and hands each, with its role's permissions, to
// add: the embedded hub's users and an existing cluster's accounts alike.
func issueUsers(credsDir string, relays, approvers []string, add func(issuedUser)) error {
	one := func(role, name string, perms *server.Permissions) error {
		if !ValidHost(name) {
			return fmt.Errorf("hub: invalid %s name %q (letters, digits, '-' and '_')", role, name)
		}
		c, err := ensureCreds(credsFile(credsDir, role, name), role, name)
		if err != nil {
			return err
		}
		_, pub, err := c.keyPair()
		if err != nil {
			return err
		}
		add(issuedUser{role: role, name: name, pub: pub, perms: perms})
		return nil
	}
	for _, r := range relays {
		if err := one(RoleRelay, r, RelayPermissions(r)); err != nil {
			return err
		}
	}
	for _, a := range approvers {
		if err := one(RoleApprover, a, ApproverPermissions(a, relays)); err != nil {
			return err
		}
	}
	return nil
}

// quoteList writes subjects as a configuration list of quoted strings, so
// that '$' is not read as a variable.
func quoteList(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
