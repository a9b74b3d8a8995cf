package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"

	xssh "golang.org/x/crypto/ssh"
)

// ForwardingRefusedError: the server refuses direct-tcpip channels
// (AllowTcpForwarding no, DisableForwarding yes), so nothing on the host's
// loopback can be reached over this connection; commands still run.
type ForwardingRefusedError struct {
	Host   string
	Reason string // the server's own words
}

func (e *ForwardingRefusedError) Error() string {
	return fmt.Sprintf("%s: the SSH server refuses port forwarding (%q): it allows no direct-tcpip channel to the host's loopback", e.Host, e.Reason)
}

// Hint says where the refusal comes from and what still works.
func (e *ForwardingRefusedError) Hint() string {
	return "the host's sshd_config sets `AllowTcpForwarding no` or `DisableForwarding yes`; allow local forwarding for this user (`AllowTcpForwarding local` in a Match block) to forward ports: logs, stop and archive work without it"
}

// forwardingRefused is err as a ForwardingRefusedError when the server
// turned a direct-tcpip open down by policy; nil otherwise.
func forwardingRefused(host string, err error) *ForwardingRefusedError {
	var oce *xssh.OpenChannelError
	if errors.As(err, &oce) && oce.Reason == xssh.Prohibited {
		return &ForwardingRefusedError{Host: host, Reason: oce.Message}
	}
	return nil
}

// DialLoopback opens a direct-tcpip channel to 127.0.0.1:port on the
// host; a server that refuses forwarding is a *ForwardingRefusedError.
func (c *Client) DialLoopback(ctx context.Context, port int) (net.Conn, error) {
	conn, err := c.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if fr := forwardingRefused(c.Target.Label(), err); fr != nil {
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
