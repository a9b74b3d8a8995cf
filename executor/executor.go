// Package executor is the SSH executor: the only package that combines
// the transport (ssh), the local store (state) and profiles. Commands call
// it; it never prints.
package executor

import (
	"context"
	"io"
	"time"

	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/state"
)

// Config is what an Executor is built from.
type Config struct {
	Store          state.Store
	SSHConfig      string        // --ssh-config; "" = OpenSSH defaults
	SSHBinary      string        // "" = ssh from PATH; "-" = built-in parser
	ConnectTimeout time.Duration // per hop; 0 = ssh.DefaultTimeout / ConnectTimeout
	Debug          io.Writer     // dial diagnostics, nil = off
	// Keepalive on long-lived connections (logs -f, --follow, forward);
	// zero takes ssh's defaults (15 s interval, 45 s deadline).
	KeepaliveInterval time.Duration
	KeepaliveDeadline time.Duration
}

// Executor runs host, profile and task operations.
type Executor struct {
	cfg Config
}

// New returns an Executor over cfg.
func New(cfg Config) *Executor { return &Executor{cfg: cfg} }

// Store exposes the store to callers that only read (watch, completion).
func (e *Executor) Store() state.Store { return e.cfg.Store }

func (e *Executor) resolveOptions() ssh.ResolveOptions {
	return ssh.ResolveOptions{ConfigFile: e.cfg.SSHConfig, SSHBinary: e.cfg.SSHBinary}
}

const probeTimeout = 30 * time.Second

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
