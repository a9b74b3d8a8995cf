package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// proxyStderrMax bounds what is kept of a ProxyCommand's stderr for the
// error that names its failure.
const proxyStderrMax = 2048

// proxyConn is a hop's connection over its ProxyCommand, run as OpenSSH
// runs one: the user's shell (/bin/sh when SHELL is unset) runs
// "exec COMMAND", its stdout is what the server sends and its stdin what
// it receives. The command has its own process group: closing the
// connection kills the group and reaps the command.
type proxyConn struct {
	out *os.File // the command's stdout
	in  *os.File // the command's stdin
	pid int

	stderr  *tailBuffer
	exited  chan struct{} // closed once the command is reaped
	waitErr error         // how it ended, set before exited is closed

	// handshaking holds the kill back while the handshake runs: x/crypto
	// closes the connection on a failed handshake, and the command's own
	// end is what says why it failed (failure).
	handshaking atomic.Bool
	closeOnce   sync.Once
	endOnce     sync.Once
}

func startProxyCommand(hop *sshconfig.Target) (*proxyConn, error) {
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &proxyConn{out: outR, in: inW, stderr: &tailBuffer{max: proxyStderrMax}, exited: make(chan struct{})}
	cmd := exec.Command(shell, "-c", "exec "+hop.ProxyCommand)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Something the command started outside its group may keep stderr
	// open; the reap does not wait for it longer than this.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		outR.Close()
		inW.Close()
		return nil, &ProxyCommandError{Hop: hop.Label(), Err: err}
	}
	p.pid = cmd.Process.Pid
	p.handshaking.Store(true)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *proxyConn) Read(b []byte) (int, error)  { return p.out.Read(b) }
func (p *proxyConn) Write(b []byte) (int, error) { return p.in.Write(b) }

// Close ends the command with the connection (after the handshake).
func (p *proxyConn) Close() error {
	p.closeOnce.Do(func() {
		p.in.Close()
		p.out.Close()
	})
	if !p.handshaking.Load() {
		p.end()
	}
	return nil
}

// end kills the command's process group and reaps the command.
func (p *proxyConn) end() {
	p.endOnce.Do(func() {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.exited
	})
}

// connected hands the command's end over to Close: the handshake is done.
func (p *proxyConn) connected() { p.handshaking.Store(false) }

func (p *proxyConn) LocalAddr() net.Addr                { return proxyAddr{} }
func (p *proxyConn) RemoteAddr() net.Addr               { return proxyAddr{} }
func (p *proxyConn) SetReadDeadline(t time.Time) error  { return p.out.SetReadDeadline(t) }
func (p *proxyConn) SetWriteDeadline(t time.Time) error { return p.in.SetWriteDeadline(t) }
func (p *proxyConn) SetDeadline(t time.Time) error {
	return errors.Join(p.out.SetReadDeadline(t), p.in.SetWriteDeadline(t))
}

// failure explains a handshake that failed over the command, and closes
// the connection. When the connection was closed, the command's own end
// (awaited within ctx) says whose it was: a command that failed, or that
// had to be stopped at the deadline, is a *ProxyCommandError carrying its
// stderr; one that exited 0 only passed on the server's hang-up.
func (p *proxyConn) failure(ctx context.Context, hop *sshconfig.Target, err error) error {
	p.Close()
	var timeout *timeoutError
	timedOut, closed := errors.As(err, &timeout), isClosed(err)
	if closed && !timedOut {
		select {
		case <-p.exited:
		case <-ctx.Done():
			timedOut = true
		}
	}
	p.end()
	if !timedOut && (!closed || p.waitErr == nil) {
		return err
	}
	e := &ProxyCommandError{Hop: hop.Label(), Stderr: p.stderr.String(), Err: err}
	if !timedOut {
		e.Status = p.waitErr.Error()
	}
	return e
}

type proxyAddr struct{}

func (proxyAddr) Network() string { return "proxycommand" }
func (proxyAddr) String() string  { return "proxycommand" }

// ProxyCommandError: the hop's ProxyCommand could not start, failed, or
// did not connect in time (exit 7, as a network failure). Its stderr is
// part of the message: it is where such a command says why.
type ProxyCommandError struct {
	Hop    string
	Status string // "exit status 1"; "" when it was stopped or never started
	Stderr string // its last lines
	Err    error
}

func (e *ProxyCommandError) Error() string {
	msg := "the ssh config's ProxyCommand"
	if e.Status != "" {
		msg += " ended (" + e.Status + ")"
	}
	msg = fmt.Sprintf("%s: %v", msg, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "; it printed: " + s
	}
	return msg
}

func (e *ProxyCommandError) Unwrap() error { return e.Err }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
