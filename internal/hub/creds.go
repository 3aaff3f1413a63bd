package hub

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/permtui/permtui/internal/safefs"
)

// Roles.
const (
	RoleRelay    = "relay"
	RoleApprover = "approver"
)

// Creds is a credentials file the hub writes (0600): an nkey seed with the
// role and name it was issued for. The server knows only the public key, and
// the connection proves the seed by signing the server's nonce.
type Creds struct {
	Role string `json:"role"`
	// Name is the relay's host, or the approver's name recorded in the
	// relay's audit record for each decision it delivers.
	Name string `json:"name"`
	Seed string `json:"seed"`

	jwtFile string // a standard NATS .creds file (an existing cluster)
}

const maxCredsBytes = 64 << 10

// ReadCreds reads a credentials file: permtui's own, or a standard NATS
// user .creds file (JWT and seed) issued by an existing cluster's operator,
// whose role and name then come from the command line.
func ReadCreds(path string) (Creds, error) {
	data, err := safefs.ReadRegularFileFollow(path, maxCredsBytes)
	if err != nil {
		return Creds{}, fmt.Errorf("credentials: %w", err)
	}
	// Like ssh with a private key: a seed others could read is not secret.
	if info, err := os.Stat(path); err != nil {
		return Creds{}, fmt.Errorf("credentials: %w", err)
	} else if info.Mode().Perm()&0o077 != 0 {
		return Creds{}, fmt.Errorf("credentials %s are readable by others (mode %v): chmod 600 them", path, info.Mode().Perm())
	}
	if bytes.Contains(data, []byte("BEGIN NATS USER JWT")) {
		return Creds{jwtFile: path}, nil
	}
	var c Creds
	if err := json.Unmarshal(data, &c); err != nil {
		return Creds{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	if err := c.check(); err != nil {
		return Creds{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	return c, nil
}

func (c Creds) check() error {
	switch {
	case c.Role != RoleRelay && c.Role != RoleApprover:
		return fmt.Errorf("unknown role %q", c.Role)
	case !ValidHost(c.Name):
		return fmt.Errorf("invalid name %q (letters, digits, '-' and '_')", c.Name)
	}
	if _, err := nkeys.FromSeed([]byte(c.Seed)); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// keyPair is the seed's key pair and its public key, the one the server
// authenticates.
func (c Creds) keyPair() (nkeys.KeyPair, string, error) {
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return nil, "", err
	}
	pub, err := kp.PublicKey()
	return kp, pub, err
}

// Standard reports a NATS .creds file (role and name are not in it).
func (c Creds) Standard() bool { return c.jwtFile != "" }

// options authenticate a connection with these credentials. A relay's
// replies come to an inbox under its own host, the only one it may read.
func (c Creds) options(role, name string) ([]nats.Option, error) {
	var opts []nats.Option
	if c.jwtFile != "" {
		opts = append(opts, nats.UserCredentials(c.jwtFile))
	} else {
		kp, pub, err := c.keyPair()
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	}
	if role == RoleRelay {
		opts = append(opts, nats.CustomInboxPrefix(relayInbox(name)))
	}
	return append(opts, nats.Name("permtui "+role+" "+name)), nil
}

// newCreds issues credentials for a role and name.
func newCreds(role, name string) (Creds, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return Creds{}, err
	}
	seed, err := kp.Seed()
	if err != nil {
		return Creds{}, err
	}
	return Creds{Role: role, Name: name, Seed: string(seed)}, nil
}

// credsFile is where the hub keeps a role's credentials.
func credsFile(dir, role, name string) string {
	return filepath.Join(dir, role+"-"+name+".creds")
}

// ensureCreds reads the credentials at path, or issues and writes them
// (0600) when there are none yet.
func ensureCreds(path, role, name string) (Creds, error) {
	c, err := ReadCreds(path)
	if err == nil {
		if c.Standard() || c.Role != role || c.Name != name {
			return Creds{}, fmt.Errorf("credentials %s are not the %s %s's", path, role, name)
		}
		return c, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return Creds{}, err
	}
	if c, err = newCreds(role, name); err != nil {
		return Creds{}, err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return Creds{}, err
	}
	if err := safefs.WriteFileAtomic(path, append(data, '\n')); err != nil {
		return Creds{}, fmt.Errorf("credentials: %w", err)
	}
	return c, nil
}
