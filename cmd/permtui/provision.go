package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/permtui/permtui/internal/hub"
)

const hubUsersSynopsis = `hub users --creds-dir DIR --relay-host NAME... --approver NAME...

Issues (or reuses) the credentials of each relay host and approver under DIR,
as the embedded hub does, and prints the accounts block of a nats-server
configuration for an existing cluster (docs/hub.md, "Pointing at an existing
NATS cluster").`

const hubProvisionSynopsis = `hub provision --server URL [--creds FILE] [--replicas N] [--retention D]

Creates or updates permtui's stream and buckets on an existing NATS deployment
with N replicas each, reads them back and fails if the server did not take a
setting permtui needs (docs/hub.md).`

func runHubUsers(args []string, stdout, stderr io.Writer) error {
	var (
		credsDir          string
		relays, approvers listFlag
	)
	fs := newFlagSet("hub users", hubUsersSynopsis, stdout, stderr)
	fs.StringVar(&credsDir, "creds-dir", "", "where the credentials files are written (0600, in a 0700 directory)")
	fs.Var(&relays, "relay-host", "a relay host (repeatable)")
	fs.Var(&approvers, "approver", "an approver (repeatable)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if credsDir == "" || len(relays) == 0 || len(approvers) == 0 {
		return fs.mistake(errors.New("--creds-dir, at least one --relay-host and one --approver are needed"))
	}
	conf, err := hub.AccountsConfig(credsDir, relays, approvers)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, conf)
	return err
}

func runHubProvision(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		server, creds string
		replicas      int
		retention     time.Duration
	)
	fs := newFlagSet("hub provision", hubProvisionSynopsis, stdout, stderr)
	fs.StringVar(&server, "server", "", "the deployment's URL(s), comma-separated; a user and password may be in them")
	fs.StringVar(&creds, "creds", "", "a standard NATS .creds file of a user allowed $JS.API.>")
	fs.IntVar(&replicas, "replicas", 3, "copies of each stream (3 on a 3-node cluster; 1 on a single server)")
	fs.DurationVar(&retention, "retention", hub.DefaultRetention, "how long asks and decisions stay on the hub")
	if err := fs.parse(args); err != nil {
		return err
	}
	if server == "" || replicas < 1 {
		return fs.mistake(errors.New("--server is needed, and --replicas at least 1"))
	}
	var opts []nats.Option
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	nc, err := nats.Connect(server, opts...)
	if err != nil {
		return fmt.Errorf("hub provision: %w", err)
	}
	defer nc.Close()
	// A cluster started just now elects its JetStream leader first.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := hub.Provision(ctx, nc, retention, replicas); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "permtui's streams are set up with %d replicas: %s, %s, %s\n", replicas, hub.AsksStream, hub.DecisionsStream, hub.GrantsStream)
	return nil
}
