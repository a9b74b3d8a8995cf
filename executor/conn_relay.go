package executor

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/ssh"
)

// A session's controller listens on the host's loopback only. It is
// reached through a direct-tcpip channel, or, on a host whose SSH server
// refuses those (AllowTcpForwarding no, DisableForwarding yes, Dropbear's
// -j), through the helper relaying over an exec channel
// (docs/architecture.md, "The CLI and its helper"): chosen on the first
// refusal, for the rest of the connection.

// relayState is a connection's choice of path to its controllers.
type relayState struct {
	mu      sync.Mutex
	refused *ssh.ForwardingRefusedError // set once the server refused a channel
	clients []*controller.Client        // made on this connection
}

// closeIdle closes the controller connections kept for reuse, each
// holding a channel: for a server that allows few (ssh.OnSessionShortage).
func (r *relayState) closeIdle() {
	r.mu.Lock()
	clients := r.clients
	r.mu.Unlock()
	for _, c := range clients {
		c.CloseIdle()
	}
}

// controller is the session's controller on port, the helper being
// looked for under root (the task's) if it must relay.
func (hc *hostConn) controller(root string, port int, token string) *controller.Client {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return hc.dialController(ctx, root, port)
	}
	c := controller.NewClient(dial, port, token)
	hc.relay.mu.Lock()
	hc.relay.clients = append(hc.relay.clients, c)
	hc.relay.mu.Unlock()
	return c
}

func (hc *hostConn) dialController(ctx context.Context, root string, port int) (net.Conn, error) {
	hc.relay.mu.Lock()
	refused := hc.relay.refused
	hc.relay.mu.Unlock()
	if refused == nil {
		conn, err := hc.c.DialLoopback(ctx, port)
		var fr *ssh.ForwardingRefusedError
		if !errors.As(err, &fr) {
			return conn, err
		}
		hc.relay.mu.Lock()
		hc.relay.refused = fr
		hc.relay.mu.Unlock()
	}
	// The helper lookup is the connection's, shared with its calls:
	// one dial at a time makes it.
	hc.relay.mu.Lock()
	helper, err := hc.helperAt(ctx, root)
	hc.relay.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return remote.Relay(ctx, hc.c, hc.host.Name, helper, port)
}
