package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	xssh "golang.org/x/crypto/ssh"
)

// ForwardingRefusedError: the server refuses direct-tcpip channels
// (AllowTcpForwarding no, DisableForwarding yes, Dropbear's -j), so
// nothing on the host's loopback can be reached over this connection;
// commands still run.
type ForwardingRefusedError struct {
	Host   string
	Reason string // the server's own words; Dropbear gives none
	Server string // its version banner: which server's setting to name
}

func (e *ForwardingRefusedError) Error() string {
	why := ""
	if e.Reason != "" {
		why = fmt.Sprintf(" (%q)", e.Reason)
	}
	return fmt.Sprintf("%s: the SSH server refuses port forwarding%s: it allows no direct-tcpip channel to the host's loopback", e.Host, why)
}

// Hint says where the refusal comes from and what still works: Dropbear
// has no sshd_config, its switch is a command-line flag.
func (e *ForwardingRefusedError) Hint() string {
	const works = "logs, stop and archive work without it"
	if e.dropbear() {
		return fmt.Sprintf("the host runs Dropbear (%s), which refuses local port forwarding when started with -j or for a key whose authorized_keys line has no-port-forwarding: restart it without -j (or drop that option) to forward ports; %s", e.Server, works)
	}
	return "the host's sshd_config sets `AllowTcpForwarding no` or `DisableForwarding yes`; allow local forwarding for this user (`AllowTcpForwarding local` in a Match block) to forward ports: " + works
}

// dropbear says whether the banner is Dropbear's ("SSH-2.0-dropbear_2022.83").
func (e *ForwardingRefusedError) dropbear() bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimPrefix(e.Server, "SSH-2.0-")), "dropbear")
}

// forwardingRefused is err as a ForwardingRefusedError when the server
// turned a direct-tcpip open down by policy, or knows no such channel
// (a Dropbear built without local forwarding); nil otherwise.
func (c *Client) forwardingRefused(err error) *ForwardingRefusedError {
	var oce *xssh.OpenChannelError
	if errors.As(err, &oce) && (oce.Reason == xssh.Prohibited || oce.Reason == xssh.UnknownChannelType) {
		return &ForwardingRefusedError{Host: c.Target.Label(), Reason: oce.Message, Server: string(c.ServerVersion())}
	}
	return nil
}

// DialLoopback opens a direct-tcpip channel to 127.0.0.1:port on the
// host; a server that refuses forwarding is a *ForwardingRefusedError.
func (c *Client) DialLoopback(ctx context.Context, port int) (net.Conn, error) {
	conn, err := c.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if fr := c.forwardingRefused(err); fr != nil {
		return nil, fr
	}
	return conn, err
}

// ForwardingAllowed asks the server for a direct-tcpip channel to port 0
// of the host's loopback, where nothing listens: a server that forwards
// answers "connect failed" (or, oddly, connects), one that does not says
// it is prohibited (a *ForwardingRefusedError). Nothing on the host is
// reached either way.
func (c *Client) ForwardingAllowed(ctx context.Context) error {
	conn, err := c.DialLoopback(ctx, 0)
	if err == nil {
		conn.Close()
		return nil
	}
	var oce *xssh.OpenChannelError
	if errors.As(err, &oce) {
		return nil
	}
	return err
}
