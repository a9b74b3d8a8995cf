package controller

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/internal/loophttp"
)

// The API listens on loopback, where every local user can connect. These
// bounds keep one of them from starving the session's owner: at worst
// the owner is refused at once, never kept waiting, and the controller
// never runs out of descriptors or memory.
const (
	maxConns    = 32 // API connections served at a time
	maxRefusing = 32 // connections over the cap being answered 503 at a time
	refuseWait  = 2 * time.Second
	maxBody     = 4 << 10 // a request's body: none needs one
)

// capListener hands the server at most maxConns connections at a time.
// One over the cap has its request read (bounded in size and time) and is
// answered 503 and closed, so the client sees why; past maxRefusing of
// those at once it is closed without a word.
type capListener struct {
	net.Listener
	slots    chan struct{}
	refusing chan struct{}
}

func capConns(ln net.Listener) net.Listener {
	return &capListener{Listener: ln, slots: make(chan struct{}, maxConns), refusing: make(chan struct{}, maxRefusing)}
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &cappedConn{Conn: c, slots: l.slots}, nil
		default:
		}
		select {
		case l.refusing <- struct{}{}:
			go func() {
				defer func() { <-l.refusing }()
				refuse(c)
			}()
		default:
			c.Close()
		}
	}
}

// cappedConn gives its slot back when closed.
type cappedConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

const busyBody = `{"error":"too many connections to the controller; try again"}` + "\n"

// refuse reads the request's headers (so that closing does not reset the
// connection under the answer), answers 503 and closes.
func refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseWait))
	buf := make([]byte, loophttp.MaxHeaderBytes)
	n := 0
	for n < len(buf) && !bytes.Contains(buf[:n], []byte("\r\n\r\n")) {
		k, err := c.Read(buf[n:])
		n += k
		if err != nil {
			return
		}
	}
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(busyBody)) + "\r\n\r\n" + busyBody))
}
