package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
)

// The host-connection layer: every operation that reaches a stored host
// (a launch, a session operation, a teardown, a host drain, a reclaim, a
// recovery, a refresh, `task exec`, a readmit's probe) connects through
// connect, and talks to the host through what it returns: commands over
// SSH (c), the helper (helperAt, call, openLaunch), a session's
// controller (controller, conn_relay.go), and whether a failure was the link dying
// (lost, linkLost). conn_helper.go puts the helper in place;
// conn_launch.go holds a launch's conversation with it.

// hostConn is one connection to a stored host, every pin enforced, with
// a keepalive watchdog: a silent link closes the client, so no step can
// hang on it.
type hostConn struct {
	e    *Executor
	host *records.Host
	c    *ssh.Client
	wd   *ssh.Watchdog
	// info is what the host said of itself when the helper was looked
	// for (its platform, the physical workdir root), and helper the one
	// found or put in place: the same for every root of the host.
	info   remote.Info
	helper *remote.Helper
	relay  relayState  // how its controllers are reached (conn_relay.go)
	conv   *helperConv // a teardown's conversation with the helper (conn_conv.go), once opened
}

// connect dials h. No host status refuses it: quarantine blocks launches,
// never recovery, inspection or teardown.
func (e *Executor) connect(ctx context.Context, h *records.Host) (*hostConn, error) {
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		return nil, err
	}
	c, err := e.dial(ctx, h, t)
	if err != nil {
		return nil, err
	}
	e.migrateCertPins(ctx, h, c.Observed)
	hc := &hostConn{e: e, host: h, c: c, wd: c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)}
	// A server short of session channels gets back those held idle:
	// kept controller connections, a teardown's helper conversation.
	c.OnSessionShortage(func() { hc.relay.closeIdle(); hc.conv.yield() })
	return hc, nil
}

// Close stops the watchdog and closes the connection.
func (hc *hostConn) Close() {
	hc.wd.Stop()
	hc.c.Close()
	hc.conv.close()
}

// lost reports whether the link died.
func (hc *hostConn) lost() bool { return hc.wd.Check() != nil }

// linkLost turns a failure caused by the link dying under an operation
// into an unreachable error (exit 7) that says so, with what was going on
// (doing), what became of it (outcome) and what to do next (hint); any
// other error is returned as is.
func (hc *hostConn) linkLost(err error, doing, outcome, hint string) error {
	if err == nil {
		return nil
	}
	gone := hc.wd.Check()
	if gone == nil {
		return err
	}
	class, why := ssh.ClassNetwork, gone.Error()
	var lost *ssh.LostError
	if errors.As(gone, &lost) {
		class, why = ssh.ClassTimeout, fmt.Sprintf("no reply to keepalives for %s", lost.Silent)
	}
	name := hc.host.Name
	return &ssh.Error{Host: name, Hop: name, Class: class, Err: fmt.Errorf("connection lost while %s (%s); %s", doing, why, outcome), Hint: hint}
}
