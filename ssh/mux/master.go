package mux

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/ssh"
)

// exitRequest is the global request that asks a master to close its
// connection and end (Exit).
const exitRequest = "exit@kandev-exec"

// handshakeTimeout bounds a client's handshake with the master: both
// ends are local.
const handshakeTimeout = 10 * time.Second

// ErrRunning: another master holds the socket already.
var ErrRunning = errors.New("a master already serves this socket")

// Listener is a master's socket, bound and held (its lock taken) before
// the master dials, so two commands never both dial for one socket.
type Listener struct {
	path string
	ln   *net.UnixListener
	lock *fsx.Lock
}

// Listen binds path for a master. The lock beside it is held for the
// master's life: when it is free, any socket left at path is a dead
// master's and is replaced. ErrRunning when a live master holds it.
func Listen(path string) (*Listener, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	lock, err := fsx.Acquire(context.Background(), path+".lock", fsx.LockOptions{What: "connection-reuse master"})
	if errors.As(err, new(*fsx.LockedError)) {
		return nil, ErrRunning
	}
	if err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Release()
		return nil, err
	}
	// Whatever the caller's umask, the socket is this user's alone.
	old := syscall.Umask(0o077)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		lock.Release()
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	return &Listener{path: path, ln: ln, lock: lock}, nil
}

// Close removes the socket and lets go of it.
func (l *Listener) Close() {
	os.Remove(l.path)
	l.ln.Close()
	os.Remove(l.path + ".lock")
	l.lock.Release()
}

// master serves one upstream connection to its clients.
type master struct {
	up      *ssh.Client
	l       *Listener
	cfg     *xssh.ServerConfig
	persist time.Duration

	mu      sync.Mutex
	clients map[net.Conn]bool
	idle    *time.Timer
	done    chan struct{}
	why     string
}

// Serve relays up to every client of l until up ends, a client asks the
// master to exit, ctx ends (a signal), or no client has been connected
// for persist (0: no idle limit). The socket is removed first, so no new client comes; the
// clients still connected are then closed. It returns why it ended
// (never nil).
func (l *Listener) Serve(ctx context.Context, up *ssh.Client, persist time.Duration) error {
	cfg, err := serverConfig()
	if err != nil {
		l.Close()
		return err
	}
	m := &master{up: up, l: l, cfg: cfg, persist: persist, clients: map[net.Conn]bool{}, done: make(chan struct{})}
	m.mu.Lock()
	m.armIdle()
	m.mu.Unlock()
	go func() {
		select {
		case <-up.Done():
			m.end("the connection to the host closed")
		case <-ctx.Done():
			m.end("stopped: " + context.Cause(ctx).Error())
		case <-m.done:
		}
	}()
	go m.accept()
	<-m.done
	l.Close()
	m.mu.Lock()
	for c := range m.clients {
		c.Close()
	}
	m.mu.Unlock()
	up.Close()
	return errors.New(m.why)
}

// serverConfig accepts any client (the socket is private and the peer's
// uid checked before the handshake) with a host key made for this
// master's life: a client's trust is in the socket, not in a key.
func serverConfig() (*xssh.ServerConfig, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	sg, err := xssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	cfg := &xssh.ServerConfig{NoClientAuth: true}
	cfg.AddHostKey(sg)
	return cfg, nil
}

func (m *master) end(why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.done:
	default:
		m.why = why
		close(m.done)
	}
}

// armIdle starts the idle clock when no client is connected (m.mu held).
func (m *master) armIdle() {
	if m.persist <= 0 || len(m.clients) > 0 {
		return
	}
	m.idle = time.AfterFunc(m.persist, func() {
		m.mu.Lock()
		idle := len(m.clients) == 0
		m.mu.Unlock()
		if idle {
			m.end(fmt.Sprintf("no command used it for %s (ControlPersist)", m.persist))
		}
	})
}

func (m *master) accept() {
	for {
		c, err := m.l.ln.AcceptUnix()
		if err != nil {
			m.end("its socket closed: " + err.Error())
			return
		}
		if uid, err := peerUID(c); err != nil || uid != os.Getuid() {
			// Another user's process: never served, whatever the
			// socket's mode let through.
			c.Close()
			continue
		}
		m.mu.Lock()
		m.clients[c] = true
		if m.idle != nil {
			m.idle.Stop()
		}
		m.mu.Unlock()
		go func() {
			m.serveClient(c)
			m.mu.Lock()
			delete(m.clients, c)
			m.armIdle()
			m.mu.Unlock()
		}()
	}
}

// serveClient runs one client's SSH connection to its end.
func (m *master) serveClient(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	sc, chans, reqs, err := xssh.NewServerConn(c, m.cfg)
	if err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	go m.globalRequests(reqs)
	for nch := range chans {
		go m.relayChannel(nch)
	}
	sc.Close()
}

// globalRequests passes a client's global requests (keepalives) to the
// host and its replies back; exitRequest ends the master.
func (m *master) globalRequests(reqs <-chan *xssh.Request) {
	for r := range reqs {
		if r.Type == exitRequest {
			r.Reply(true, nil)
			m.end("asked to exit")
			continue
		}
		ok, payload, err := m.up.SendRequest(r.Type, r.WantReply, r.Payload)
		if r.WantReply {
			r.Reply(ok && err == nil, payload)
		}
	}
}
