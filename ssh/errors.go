package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// Class is the kind of a transport failure. Classification follows a fixed
// order (config, timeout, host_key, auth, network, unknown) so that one
// failure never gets two answers.
type Class string

const (
	ClassConfig        Class = "config"
	ClassTimeout       Class = "timeout"
	ClassTrustRequired Class = "trust_required" // a host_key failure: no pin yet
	ClassHostKey       Class = "host_key"       // a host_key failure: pin mismatch
	ClassAuth          Class = "auth"
	ClassNetwork       Class = "network"
	ClassUnknown       Class = "unknown"
)

// Error is a transport failure naming the host the user asked for and the
// hop that failed (the same when there is no jump).
type Error struct {
	Host  string // the host the user asked for
	Hop   string // the hop that failed, as sshconfig.Target.Label()
	Class Class
	// ViaHop is set when a jump host failed rather than the target.
	ViaHop bool
	Err    error
	Hint   string
	// Observed are the host keys seen before the failure, so `host test`
	// can show the key that did not match.
	Observed []Observed
}

func (e *Error) Error() string {
	if e.Class == ClassConfig {
		return fmt.Sprintf("host %s: %v", e.Host, e.Err)
	}
	where := e.Hop
	switch {
	case e.ViaHop:
		where = fmt.Sprintf("%s via hop %s", e.Host, e.Hop)
	case e.Host != "" && !strings.HasPrefix(e.Hop, e.Host+" ") && e.Hop != e.Host:
		where = fmt.Sprintf("%s: %s", e.Host, e.Hop)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// TrustRequiredError: the hop has no pinned key yet.
type TrustRequiredError struct {
	Observed Pin
}

func (e *TrustRequiredError) Error() string {
	return fmt.Sprintf("host key not trusted yet (presented %s %s)", e.Observed.KeyType, e.Observed.Fingerprint)
}

// HostKeyChangedError: the hop presented a key other than the pinned one.
type HostKeyChangedError struct {
	Expected Pin
	Got      Pin
}

func (e *HostKeyChangedError) Error() string {
	if e.Got.IsZero() {
		return fmt.Sprintf("host key changed: expected %s, but the host no longer offers a %s key", e.Expected, e.Expected.KeyType)
	}
	return fmt.Sprintf("host key changed: expected %s, got %s", e.Expected, e.Got)
}

// NoIdentitiesError: nothing to offer the server (exit 6).
type NoIdentitiesError struct {
	Tried []string
	Agent string // why the agent offered nothing
}

func (e *NoIdentitiesError) Error() string {
	return fmt.Sprintf("no identities to offer: no IdentityFile is readable (tried %s), and %s", strings.Join(e.Tried, ", "), e.Agent)
}

// HandshakeClosedError: the server ended the connection during the key
// exchange, before presenting a host key. A server that offers a host
// key algorithm it has no key for does that when the client picks it, so
// `host trust` tries each key type in turn (KeyAlgorithmFamilies).
type HandshakeClosedError struct {
	Addr       string
	Algorithms []string // the host key algorithms offered
	Err        error
}

func (e *HandshakeClosedError) Error() string {
	return fmt.Sprintf("the server closed the connection during the SSH handshake, before presenting a host key (offered host key algorithms %s): %v",
		strings.Join(e.Algorithms, ","), e.Err)
}

func (e *HandshakeClosedError) Unwrap() error { return e.Err }

// PassphraseKeyError: a key needs a passphrase and no agent holds it,
// with no terminal to ask on (Agent says why no agent held it), or the
// passphrase given was wrong every time.
type PassphraseKeyError struct {
	Path  string
	Agent string // why the agent did not offer it
	Wrong bool
	Err   error // the server's refusal of what was offered instead
}

func (e *PassphraseKeyError) Error() string {
	msg := fmt.Sprintf("identity %s is protected by a passphrase and %s", e.Path, e.Agent)
	if e.Wrong {
		msg = fmt.Sprintf("identity %s: wrong passphrase, %d times", e.Path, passphraseTries)
	}
	if e.Err != nil {
		msg = strings.TrimPrefix(e.Err.Error(), "ssh: handshake failed: ") + ": " + msg
	}
	return msg
}

func (e *PassphraseKeyError) Unwrap() error { return e.Err }

// hint says what lets the key be used.
func (e *PassphraseKeyError) hint() string {
	if e.Wrong {
		return "check the passphrase (`ssh-keygen -y -f " + e.Path + "` asks for it)"
	}
	return fmt.Sprintf("load it into ssh-agent (`ssh-add %s`), or run the command on a terminal to be asked for its passphrase", e.Path)
}

// timeoutError marks a deadline we imposed ourselves.
type timeoutError struct {
	what string
	d    string
}

func (e *timeoutError) Error() string { return fmt.Sprintf("%s timed out after %s", e.what, e.d) }
func (e *timeoutError) Timeout() bool { return true }

// classify wraps err for hop in the order config, timeout, host_key, auth,
// network, unknown.
func classify(host string, hop *sshconfig.Target, err error) *Error {
	var already *Error
	if errors.As(err, &already) {
		return already
	}
	e := &Error{Host: host, Hop: hop.Label(), Err: err}
	var (
		pc   *ProxyCommandError
		hc   *HandshakeClosedError
		cfg  *sshconfig.ConfigError
		tr   *TrustRequiredError
		hk   *HostKeyChangedError
		hce  *HostCertError
		pp   *PassphraseKeyError
		none *NoIdentitiesError
		nerr interface{ Timeout() bool }
		op   *net.OpError
	)
	switch {
	case errors.As(err, &cfg):
		e.Class = ClassConfig
	case errors.As(err, &pc):
		e.Class = ClassNetwork
		if errors.As(err, &nerr) && nerr.Timeout() {
			e.Class = ClassTimeout
		}
		e.Hint = fmt.Sprintf("the connection to %s goes through the ProxyCommand of your ssh config: check that it works (`ssh -v %s true` shows what it runs)", pc.Hop, hop.Name)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		e.Class = ClassTimeout
		e.Hint = "check that the host is up and reachable, or raise --connect-timeout"
	case errors.As(err, &hc):
		e.Class = ClassNetwork
		e.Hint = fmt.Sprintf("the server answers but hangs up before its host key, as one does when asked for a key type it lists without having: `kandev-exec host test %s` tries each type", host)
	case errors.As(err, &tr):
		e.Class, e.Err = ClassTrustRequired, tr
		e.Hint = fmt.Sprintf("run `kandev-exec host test %s`, then `kandev-exec host trust %s`", host, host)
	case errors.As(err, &hk):
		e.Class, e.Err = ClassHostKey, hk
		e.Hint = fmt.Sprintf("if the key rotated on purpose, verify it out of band, then `kandev-exec host trust %s --replace --fingerprint <new>`", host)
		if !hk.Got.IsZero() {
			e.Hint = fmt.Sprintf("if the key rotated on purpose, verify it out of band, then `kandev-exec host trust %s --replace --fingerprint %s`", host, hk.Got.Fingerprint)
		}
	case errors.As(err, &hce):
		e.Class, e.Err = ClassHostKey, hce
		e.Hint = fmt.Sprintf("the host is trusted through its CA, and this certificate does not hold: renew it on the host, or `kandev-exec host trust %s --replace` to trust it another way", host)
	case errors.As(err, &none):
		e.Class, e.Err = ClassAuth, none
		e.Hint = "load a key into ssh-agent (`ssh-add`), or name one with IdentityFile or `host add --identity-file`"
	case errors.As(err, &pp):
		e.Class, e.Err, e.Hint = ClassAuth, pp, pp.hint()
	case strings.Contains(err.Error(), "Too many authentication failures"):
		e.Class = ClassAuth
		e.Err = errors.New("too many authentication failures: the server gave up before the right key was offered")
		e.Hint = "offer only the host's key: IdentitiesOnly yes with its IdentityFile in the ssh config, or `host add --identity-file F --identities-only`"
	case strings.Contains(err.Error(), "unable to authenticate"), strings.Contains(err.Error(), "no authentication methods"):
		e.Class = ClassAuth
		e.Err = errors.New(strings.TrimPrefix(err.Error(), "ssh: handshake failed: "))
		e.Hint = "check the user and that one of the identities is authorized on the host (`ssh-add -l`, IdentityFile)"
	case errors.As(err, &op), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, os.ErrDeadlineExceeded),
		isOpenChannelError(err):
		e.Class = ClassNetwork
		e.Hint = "check the address, the port and that sshd is running"
	default:
		e.Class = ClassUnknown
	}
	return e
}

func isOpenChannelError(err error) bool {
	var oce *xssh.OpenChannelError
	return errors.As(err, &oce)
}
