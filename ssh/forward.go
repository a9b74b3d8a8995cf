package ssh

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
)

// Forward accepts connections on ln and carries each to remoteAddr (as
// seen from the host) over its own direct-tcpip channel, until ctx ends or
// the SSH connection dies. Channel opens are serialised: parallel opens
// have been seen to fail with EOF on some servers.
func (c *Client) Forward(ctx context.Context, ln net.Listener, remoteAddr string, onErr func(error)) error {
	var openMu sync.Mutex
	var wg sync.WaitGroup
	go func() {
		select {
		case <-ctx.Done():
		case <-c.Done():
		}
		ln.Close()
	}()
	defer wg.Wait()
	for {
		local, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			select {
			case <-c.Done():
				return errors.New("ssh connection closed")
			default:
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			openMu.Lock()
			remote, err := c.Dial("tcp", remoteAddr)
			openMu.Unlock()
			if err != nil {
				local.Close()
				if onErr != nil {
					onErr(err)
				}
				return
			}
			Splice(local, remote)
		}()
	}
}

// Done is closed when the SSH connection ends, for whatever reason.
func (c *Client) Done() <-chan struct{} {
	c.waitOnce.Do(func() {
		c.waitCh = make(chan struct{})
		go func() { c.Wait(); close(c.waitCh) }()
	})
	return c.waitCh
}

// Splice copies both ways and half-closes each direction when its source
// ends, so protocols that rely on half-close (HTTP, WebSockets) work.
func Splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go pipe(a, b)
	go pipe(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
