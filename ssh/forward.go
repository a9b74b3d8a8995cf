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
// When ctx ends, open connections are closed too: Ctrl-C must not wait
// for a client that keeps its connection open.
func (c *Client) Forward(ctx context.Context, ln net.Listener, remoteAddr string, onErr func(error)) error {
	var openMu sync.Mutex
	var wg sync.WaitGroup
	var live sync.Map // net.Conn -> struct{}: both sides of every carried connection
	stop := make(chan struct{})
	done := make(chan struct{})
	// However Forward ends, the connections it carries end with it.
	defer func() { close(stop); <-done; wg.Wait() }()
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-c.Done():
		case <-stop:
		}
		ln.Close()
		live.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	}()
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
		live.Store(local, struct{}{})
		if ctx.Err() != nil { // raced with the shutdown's sweep
			local.Close()
		}
		go func() {
			defer wg.Done()
			defer live.Delete(local)
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
			live.Store(remote, struct{}{})
			defer live.Delete(remote)
			if ctx.Err() != nil {
				remote.Close()
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
