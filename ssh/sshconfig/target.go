package sshconfig

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Target is one fully resolved SSH endpoint, with the chain of jump hosts
// in front of it (first hop first). Every hop carries its own settings.
type Target struct {
	Name          string   // what the user typed (host name or alias), used in errors
	HostName      string   // what to connect to
	Port          int      // 22 when unset
	User          string   // login user
	IdentityFiles []string // absolute paths, in the order OpenSSH tries them
	// CertificateFiles are user certificates (CertificateFile), each
	// offered with the private key of its certified key.
	CertificateFiles []string
	IdentitiesOnly   bool
	IdentityAgent    string // socket path; "" = SSH_AUTH_SOCK; "none" = no agent
	ConnectTimeout   int    // seconds from ConnectTimeout, 0 when unset
	// HostKeyAlias is the name the host's key is known by, when the config
	// gives one: a host certificate must name it instead of HostName.
	HostKeyAlias string
	// RevokedHostKeys is the file of host and CA keys no longer trusted.
	RevokedHostKeys string
	// ProxyCommand is the command whose standard input and output carry
	// the connection, its tokens expanded ("" connects directly). Only
	// the first hop of a chain has one. It comes from the operator's own
	// ssh config on every resolve, never from a stored record: see
	// docs/security.md.
	ProxyCommand string
	// Reuse says a command's connection is left for the next command to
	// this host, as OpenSSH's ControlMaster does: on when ControlMaster
	// is yes, auto, ask or autoask, a ControlPath is set (OpenSSH shares
	// no connection without one), and ControlPersist is not no (a command
	// with nothing persisting would leave nothing behind). Only the
	// target's own settings count; the jump hosts ride inside its
	// connection.
	Reuse bool
	// ControlPersist is how long a left connection waits, idle, for the
	// next command; 0 waits as long as it lives.
	ControlPersist time.Duration
	Jumps          []*Target
}

// Addr is host:port, bracketing IPv6 literals.
func (t *Target) Addr() string {
	return net.JoinHostPort(t.HostName, strconv.Itoa(t.Port))
}

// Label names the endpoint in messages: the alias, and the address when
// that says more.
func (t *Target) Label() string {
	if t.Name == "" || t.Name == t.HostName {
		return t.Addr()
	}
	return fmt.Sprintf("%s (%s)", t.Name, t.Addr())
}

// KeyName is the name a host certificate of t must certify, as OpenSSH
// checks it: HostKeyAlias when set, else HostName.
func (t *Target) KeyName() string {
	if t.HostKeyAlias != "" {
		return t.HostKeyAlias
	}
	return t.HostName
}

// Hops returns the jump hosts followed by the target itself.
func (t *Target) Hops() []*Target {
	out := append([]*Target{}, t.Jumps...)
	return append(out, t)
}

// JumpSpec renders the chain as a ProxyJump value (for display).
func (t *Target) JumpSpec() string {
	parts := make([]string, 0, len(t.Jumps))
	for _, j := range t.Jumps {
		parts = append(parts, j.Name)
	}
	return strings.Join(parts, ",")
}

// ConfigError is a problem in the user's ssh configuration or flags.
type ConfigError struct {
	File string // may be empty
	Line int    // 0 when unknown
	Msg  string
}

func (e *ConfigError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return e.Msg
}
