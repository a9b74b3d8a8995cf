package helper

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
)

// relayDialTimeout bounds the connect on the host's own loopback.
const relayDialTimeout = 10 * time.Second

// relayed is OpRelay's result: the connection made, which Serve carries
// once the answer is out.
type relayed struct{ conn *net.TCPConn }

// openRelay connects to the port on the host's loopback: never another
// address, so the helper reaches nothing its user could not.
func openRelay(ctx context.Context, r protocol.RelayRequest) (any, error) {
	if r.Port < 1 || r.Port > 65535 {
		return nil, &protocol.Error{Code: protocol.CodeBadRequest, Message: fmt.Sprintf("relay: bad port %d", r.Port)}
	}
	d := net.Dialer{Timeout: relayDialTimeout}
	c, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", r.Port))
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return &relayed{conn: c.(*net.TCPConn)}, nil
}

// carry copies the rest of the helper's stdin (in, with what Serve has
// buffered) to the connection and the connection to stdout, until the
// connection's far end is done: then the helper exits, which ends the
// channel. The end of stdin half-closes the connection, as the CLI's
// end of it would.
func (r *relayed) carry(in *bufio.Reader, out io.Writer) error {
	defer r.conn.Close()
	go func() {
		_, _ = io.Copy(r.conn, in)
		_ = r.conn.CloseWrite()
	}()
	_, err := io.Copy(out, r.conn)
	return err
}
