package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// DefaultTimeout bounds TCP connect plus handshake per hop when neither
// the caller nor ConnectTimeout in the ssh config sets one.
const DefaultTimeout = 10 * time.Second

// DialOptions controls one dial.
type DialOptions struct {
	Pins    Pins // by hop address
	CAs     CAs  // by hop address: trusted through a CA instead of a pin
	Mode    TrustMode
	Timeout time.Duration // per hop: TCP connect + handshake
	Debug   io.Writer     // dial chain diagnostics; nil = silent
	// Host names what the user asked for, for errors (defaults to the Target's Name).
	Host string
	// Algorithms restricts the host key algorithms of unpinned hops, by
	// address (to reach a particular key of a server that has several).
	Algorithms map[string][]string
	// Unlocker asks for the passphrases of identity files; nil never asks.
	Unlocker *Unlocker
}

// Client is an authenticated connection to a target through its hops.
// Closing it closes every hop; when the target's connection ends for any
// reason the hops are closed too.
type Client struct {
	*xssh.Client
	Target   *sshconfig.Target
	Observed []Observed
	hops     []*xssh.Client

	waitOnce sync.Once
	waitCh   chan struct{}
	slots    sessionSlots // session channels open (sessions.go)
}

// Close closes the target connection and then each hop, innermost first.
func (c *Client) Close() error {
	err := c.Client.Close()
	for i := len(c.hops) - 1; i >= 0; i-- {
		c.hops[i].Close()
	}
	return err
}

// Dial connects to t through every jump host, checking each hop's host key
// against opts.Pins. A failure is an *Error naming the host and the hop;
// its Observed keys are reported even on failure (so `host test` can show
// a changed key).
func Dial(ctx context.Context, t *sshconfig.Target, opts DialOptions) (*Client, error) {
	host := opts.Host
	if host == "" {
		host = t.Name
	}
	rec := &keyRecorder{}
	var chain []*xssh.Client
	closeChain := func() {
		for i := len(chain) - 1; i >= 0; i-- {
			chain[i].Close()
		}
	}
	for _, hop := range t.Hops() {
		var prev *xssh.Client
		if len(chain) > 0 {
			prev = chain[len(chain)-1]
		}
		c, err := dialHop(ctx, prev, hop, opts, rec)
		if err != nil {
			closeChain()
			e := classify(host, hop, err)
			e.Observed, e.ViaHop = rec.all(), hop != t
			return nil, e
		}
		chain = append(chain, c)
	}
	target := chain[len(chain)-1]
	hops := chain[:len(chain)-1]
	if len(hops) > 0 {
		go func() {
			target.Wait()
			for i := len(hops) - 1; i >= 0; i-- {
				hops[i].Close()
			}
		}()
	}
	return &Client{Client: target, Target: t, Observed: rec.all(), hops: hops}, nil
}

// Reused makes c, a connection to t that a connection-reuse master
// (ssh/mux) holds, a Client like a dialled one: the watchdog, session
// counting and forwarding work on it the same. It has no Observed keys:
// the master checked every pin when it dialled.
func Reused(t *sshconfig.Target, c *xssh.Client) *Client {
	return &Client{Client: c, Target: t}
}

func timeoutFor(hop *sshconfig.Target, opts DialOptions) time.Duration {
	switch {
	case opts.Timeout > 0:
		return opts.Timeout
	case hop.ConnectTimeout > 0:
		return time.Duration(hop.ConnectTimeout) * time.Second
	}
	return DefaultTimeout
}

func dialHop(ctx context.Context, prev *xssh.Client, hop *sshconfig.Target, opts DialOptions, rec *keyRecorder) (*xssh.Client, error) {
	timeout := timeoutFor(hop, opts)
	ctx, deadline, cancel := withHopDeadline(ctx, timeout)
	defer cancel()
	debugf(opts.Debug, "dial %s (user %s, timeout %s)", hop.Label(), hop.User, timeout)
	if hop.ProxyCommand != "" {
		debugf(opts.Debug, "  through the ssh config's ProxyCommand")
	}

	auth := planAuth(hop, opts.Unlocker, deadline)
	// With nothing to offer, the dial still goes on: the host key is
	// worth reporting, and the server gets to say no.
	defer auth.closer()
	debugf(opts.Debug, "  offering %d key(s) (%s), identities_only=%v", len(auth.signers), keyTypes(auth.signers), hop.IdentitiesOnly)

	pin, ca := opts.Pins[hop.Addr()], opts.CAs[hop.Addr()]
	algos := hostKeyAlgorithms(pin)
	switch a := opts.Algorithms[hop.Addr()]; {
	case ca != "":
		algos, pin = certAlgorithms, Pin{}
	case pin.IsZero() && a != nil:
		algos = a
	}
	cfg := &xssh.ClientConfig{
		User:              hop.User,
		Auth:              []xssh.AuthMethod{xssh.PublicKeys(auth.signers...)},
		HostKeyCallback:   rec.callback(hop, pin, ca, opts.Mode),
		HostKeyAlgorithms: algos,
		Timeout:           timeout,
	}
	c, err := connectHop(ctx, prev, hop, cfg, rec, timeout)
	if errors.As(err, new(*HandshakeClosedError)) && opts.Mode == Record && pin.IsZero() && ca == "" {
		c, err = tryEachKeyType(ctx, prev, hop, cfg, rec, timeout, err, opts.Debug)
	}
	if err != nil {
		return nil, explainFailure(err, pin, ca, auth)
	}
	if obs := rec.all(); len(obs) > 0 {
		last := obs[len(obs)-1]
		debugf(opts.Debug, "  host key %s (pinned: %v, allowed algorithms %v)", last.Pin, !pin.IsZero(), cfg.HostKeyAlgorithms)
	}
	debugf(opts.Debug, "  connected to %s as %s (server %s)", hop.Label(), hop.User, c.ServerVersion())
	return c, nil
}

// tryEachKeyType dials the hop again offering one key type at a time,
// after closed: a server may list a host key type it has no key for and
// hang up when the client picks it. The first dial not hung up on
// stands; when every one is, closed does.
func tryEachKeyType(ctx context.Context, prev *xssh.Client, hop *sshconfig.Target, cfg *xssh.ClientConfig, rec *keyRecorder,
	timeout time.Duration, closed error, debug io.Writer) (*xssh.Client, error) {
	tried := cfg.HostKeyAlgorithms
	for _, fam := range KeyAlgorithmFamilies {
		if slices.Equal(fam, tried) {
			continue
		}
		debugf(debug, "  handshake closed; trying host key algorithms %v", fam)
		cfg.HostKeyAlgorithms = fam
		if c, err := connectHop(ctx, prev, hop, cfg, rec, timeout); !errors.As(err, new(*HandshakeClosedError)) {
			return c, err
		}
	}
	return nil, closed
}

// explainFailure names what a failed handshake means for this hop: a
// pinned key type or a certificate the server no longer offers, or, for
// a failed login, a locked key or an agent that could not help.
func explainFailure(err error, pin Pin, ca string, auth *authPlan) error {
	noKeyType := strings.Contains(err.Error(), "no common algorithm for host key")
	switch {
	case ca != "" && noKeyType:
		return &HostCertError{CA: ca, Reason: "the host presents no host certificate"}
	case !pin.IsZero() && noKeyType:
		// The pinned key's type is gone from the server: a changed key.
		return &HostKeyChangedError{Expected: pin}
	case errors.As(err, new(*PassphraseKeyError)) || !isAuthFailure(err):
		return err
	case len(auth.locked) > 0:
		return &PassphraseKeyError{Path: auth.locked[0], Agent: auth.agent.describe("ssh-agent does not hold it"), Err: err}
	case auth.none != nil:
		return auth.none
	case auth.agent.unusable():
		return fmt.Errorf("%w; and %s", err, auth.agent.describe(""))
	}
	return err
}

// connectHop opens the hop's connection and runs the handshake over it.
// A server that hangs up before presenting a host key is a
// *HandshakeClosedError; a ProxyCommand that fails, a *ProxyCommandError.
func connectHop(ctx context.Context, prev *xssh.Client, hop *sshconfig.Target, cfg *xssh.ClientConfig, rec *keyRecorder, timeout time.Duration) (*xssh.Client, error) {
	conn, err := hopConn(ctx, prev, hop)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &timeoutError{what: "connect to " + hop.Addr(), d: timeout.String()}
		}
		return nil, err
	}
	seen := len(rec.all())
	c, err := handshake(ctx, conn, hop.Addr(), cfg, timeout)
	pc, viaProxy := conn.(*proxyConn)
	switch {
	case err == nil && viaProxy:
		pc.connected()
		return c, nil
	case err == nil:
		return c, nil
	case viaProxy:
		err = pc.failure(ctx, hop, err)
	default:
		conn.Close()
	}
	if len(rec.all()) == seen && isClosed(err) && !errors.As(err, new(*ProxyCommandError)) {
		return nil, &HandshakeClosedError{Addr: hop.Addr(), Algorithms: cfg.HostKeyAlgorithms, Err: err}
	}
	return nil, err
}

// hopConn is the connection a hop's SSH session runs over: TCP or the
// ProxyCommand to the first hop (sshconfig gives no other hop one), a
// direct-tcpip channel through the one before it after that.
func hopConn(ctx context.Context, prev *xssh.Client, hop *sshconfig.Target) (net.Conn, error) {
	switch {
	case prev != nil:
		return prev.DialContext(ctx, "tcp", hop.Addr())
	case hop.ProxyCommand != "":
		return startProxyCommand(hop)
	}
	return (&net.Dialer{}).DialContext(ctx, "tcp", hop.Addr())
}

// isClosed says the peer ended the connection (a ProxyCommand's end shows
// as a broken pipe when the client writes first).
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

func isAuthFailure(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Class == ClassAuth
	}
	return classify("", &sshconfig.Target{}, err).Class == ClassAuth
}

// handshake runs the SSH handshake under a deadline: x/crypto has none of
// its own, and a channel through a jump host does not support deadlines,
// so the connection is closed when the time is up. After any other
// failure, closing it is the caller's.
func handshake(ctx context.Context, conn net.Conn, addr string, cfg *xssh.ClientConfig, timeout time.Duration) (*xssh.Client, error) {
	type result struct {
		c   *xssh.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		sc, chans, reqs, err := xssh.NewClientConn(conn, addr, cfg)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{c: xssh.NewClient(sc, chans, reqs)}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
		conn.Close()
		if r := <-done; r.c != nil {
			r.c.Close()
		}
		return nil, &timeoutError{what: "SSH handshake with " + addr, d: timeout.String()}
	}
}

func debugf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, "debug: "+format+"\n", a...)
	}
}

// keyTypes names the offered keys by type and fingerprint (public
// material only) for --debug.
func keyTypes(signers []xssh.Signer) string {
	parts := make([]string, len(signers))
	for i, sg := range signers {
		parts[i] = PinOf(sg.PublicKey()).String()
	}
	return strings.Join(parts, ", ")
}
