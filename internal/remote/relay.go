package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/ssh"
)

// Relay reaches port on the host's loopback through the helper (OpRelay)
// over an exec channel: how a session's controller is asked on a host
// whose SSH server forwards no ports. The connection is the helper's
// stdin and stdout; closing it ends the channel.
func Relay(ctx context.Context, c *ssh.Client, host string, helper Helper, port int) (net.Conn, error) {
	in, err := protocol.EncodeRequest(protocol.OpRelay, protocol.RelayRequest{Port: port})
	if err != nil {
		return nil, err
	}
	// The channel outlives ctx, which only bounds the dial: it ends when
	// the connection is closed.
	cv, err := Converse(context.WithoutCancel(ctx), c, host, ServeScript(helper), protocol.OpRelay, in, ProbeTimeout)
	if err != nil {
		return nil, err
	}
	if !cv.Served {
		return nil, cv.failed(protocol.OpRelay, errors.New("the helper was not started"))
	}
	answered := make(chan error, 1)
	go func() { answered <- cv.Next(ProbeTimeout, nil, nil) }()
	select {
	case err = <-answered:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		cv.cancel()
		<-cv.done
		return nil, err
	}
	return &relayConn{cv: cv, r: cv.answers.Rest()}, nil
}

// relayConn is a connection carried by the helper: reads are its stdout
// past the relay's answer, writes its stdin.
type relayConn struct {
	cv   *Conversation
	r    io.Reader
	mu   sync.Mutex // writes against Close
	once sync.Once
}

func (rc *relayConn) Read(p []byte) (int, error) { return rc.r.Read(p) }

func (rc *relayConn) Write(p []byte) (int, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.cv.closed {
		return 0, net.ErrClosed
	}
	select {
	case rc.cv.msgs <- append([]byte(nil), p...):
		return len(p), nil
	case <-rc.cv.done:
		return 0, io.ErrClosedPipe
	}
}

// Close ends the channel at once: the helper, its stdin and stdout gone,
// exits and so closes its side of the connection.
func (rc *relayConn) Close() error {
	rc.once.Do(func() {
		rc.cv.cancel()
		<-rc.cv.done
		rc.mu.Lock()
		rc.cv.CloseInput()
		rc.mu.Unlock()
	})
	return nil
}

func (rc *relayConn) LocalAddr() net.Addr  { return relayAddr{} }
func (rc *relayConn) RemoteAddr() net.Addr { return relayAddr{} }

// Deadlines are not kept: the controller's client bounds its calls by
// their contexts, and a silent link closes the whole SSH connection.
func (rc *relayConn) SetDeadline(time.Time) error      { return nil }
func (rc *relayConn) SetReadDeadline(time.Time) error  { return nil }
func (rc *relayConn) SetWriteDeadline(time.Time) error { return nil }

// relayAddr names the helper's end of a relayed connection.
type relayAddr struct{}

func (relayAddr) Network() string { return "helper-relay" }
func (relayAddr) String() string  { return "helper relay" }
