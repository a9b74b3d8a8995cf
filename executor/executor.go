// Package executor is the SSH executor: the only package that combines
// the transport (ssh), the local store (state) and profiles. Commands call
// it; it never prints.
package executor

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/vault"
)

// Config is what an Executor is built from.
type Config struct {
	Store          state.Store
	StateDir       string        // the local state directory: the vault and local locks live there
	SSHConfig      string        // --ssh-config; "" = OpenSSH defaults
	SSHBinary      string        // "" = ssh from PATH; "-" = built-in parser
	ConnectTimeout time.Duration // per hop; 0 = ssh.DefaultTimeout / ConnectTimeout
	Debug          io.Writer     // dial diagnostics, nil = off
	// Keepalive on long-lived connections (logs -f, --follow, forward);
	// zero takes ssh's defaults (15 s interval, 45 s deadline).
	KeepaliveInterval time.Duration
	KeepaliveDeadline time.Duration
	// ClaimTTL is how long a claim outlives its holder's last renewal
	// (zero: DefaultClaimTTL).
	ClaimTTL time.Duration
	// Passphrase asks for an identity file's passphrase (prompt shown,
	// nothing echoed); nil when there is no terminal to ask on.
	Passphrase func(prompt string) ([]byte, error)
	// MasterCommand is the command that runs this program as host's
	// connection-reuse master (RunMaster), with the settings this one
	// has; nil never reuses a connection (reuse.go).
	MasterCommand func(host string) (*exec.Cmd, error)
}

// Executor runs host, profile and task operations.
type Executor struct {
	cfg    Config
	vault  *vault.Vault
	unlock *ssh.Unlocker // asks each passphrase once for the executor's life
	kept   keptConns     // a reclaim listing's connections, for its apply (reclaimconn.go)
}

// New returns an Executor over cfg.
func New(cfg Config) *Executor {
	return &Executor{cfg: cfg, vault: vault.New(cfg.StateDir, cfg.Store), unlock: &ssh.Unlocker{Prompt: cfg.Passphrase}}
}

// Vault is the operator's secrets and session tokens.
func (e *Executor) Vault() *vault.Vault { return e.vault }

// locksDir is <state dir>/locks (0700), for locks that only matter on
// this machine.
func (e *Executor) locksDir() (string, error) { return e.localDir("locks") }

// localDir is <state dir>/name (0700), made with the state dir when
// missing: with a shared store, an operator's state dir may not exist
// until something of this machine's is written there.
func (e *Executor) localDir(name string) (string, error) {
	if _, err := fsx.EnsureDir(e.cfg.StateDir, 0o700); err != nil {
		return "", err
	}
	dir := filepath.Join(e.cfg.StateDir, name)
	_, err := fsx.EnsureDir(dir, 0o700)
	return dir, err
}

// Store exposes the store to callers that only read (watch, completion).
func (e *Executor) Store() state.Store { return e.cfg.Store }

func (e *Executor) resolveOptions() sshconfig.ResolveOptions {
	return sshconfig.ResolveOptions{ConfigFile: e.cfg.SSHConfig, SSHBinary: e.cfg.SSHBinary}
}

// probeTimeout bounds a round trip to a host, as for the helper's.
const probeTimeout = remote.ProbeTimeout

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
