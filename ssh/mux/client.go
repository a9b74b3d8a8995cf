package mux

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// Dial connects to the master at path as t's connection, within
// timeout. It refuses a socket directory another user could reach into,
// and a socket served by another user's process.
func Dial(ctx context.Context, path string, t *sshconfig.Target, timeout time.Duration) (*ssh.Client, error) {
	c, err := dialMaster(ctx, path, t.User, timeout)
	if err != nil {
		return nil, err
	}
	return ssh.Reused(t, c), nil
}

func dialMaster(ctx context.Context, path, user string, timeout time.Duration) (*xssh.Client, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	nc, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	uid, err := peerUID(nc.(*net.UnixConn))
	if err == nil && uid != os.Getuid() {
		err = fmt.Errorf("connection reuse refused: %s is served by uid %d, not this user's (uid %d)", path, uid, os.Getuid())
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(timeout))
	cfg := &xssh.ClientConfig{User: user, Timeout: timeout,
		// The master's key is made for its life and proves nothing; what
		// is trusted is the socket: a private directory and a peer of
		// this uid, both checked above. The host's own key was checked
		// against its pins when the master dialled.
		HostKeyCallback: func(string, net.Addr, xssh.PublicKey) error { return nil }}
	cc, chans, reqs, err := xssh.NewClientConn(nc, "master", cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return xssh.NewClient(cc, chans, reqs), nil
}

// Exit asks the master at path to close its connection and end, and
// waits (at most timeout) until it has. A socket nobody serves is
// removed; it is not an error.
func Exit(ctx context.Context, path string, timeout time.Duration) (bool, error) {
	c, err := dialMaster(ctx, path, "exit", timeout)
	if err != nil {
		if IsStale(err) {
			os.Remove(path)
			return false, nil
		}
		return false, err
	}
	defer c.Close()
	if _, _, err := c.SendRequest(exitRequest, true, nil); err != nil {
		return false, err
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
		return true, nil
	case <-time.After(timeout):
		return false, fmt.Errorf("the master at %s did not end within %s", path, timeout)
	}
}

// CloseHost ends every master of host in dir; it returns how many ended.
func CloseHost(ctx context.Context, dir, host string, timeout time.Duration) (int, error) {
	socks, err := HostSockets(dir, host)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range socks {
		ended, err := Exit(ctx, s, timeout)
		if err != nil {
			return n, err
		}
		if ended {
			n++
		}
	}
	return n, nil
}

// IsStale says a Dial found no master behind the socket: absent, or left
// by one that died (nothing listens). A master is then to be started.
func IsStale(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)
}
