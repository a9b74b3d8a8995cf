package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/shquote"
)

// BootstrapCommand wraps a script so it runs under /bin/sh whatever the
// user's login shell is (sshd hands the command to the login shell).
func BootstrapCommand(script string) string {
	if !strings.ContainsAny(script, "\n\r") {
		return "/bin/sh -c " + shquote.Quote(script)
	}
	// tcsh cannot hold a newline inside quotes: carry the script as printf
	// %b escapes on one line and let /bin/sh rebuild and eval it.
	enc := scriptEscaper.Replace(script)
	return "/bin/sh -c " + shquote.Quote(`eval "$(printf '%b' '`+enc+`')"`)
}

// scriptEscaper encodes for printf %b: \0ddd is an octal byte there.
var scriptEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "'", `\0047`)

// ExitError is a remote command that ran and exited non-zero.
type ExitError struct {
	Code   int
	Signal string
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return fmt.Sprintf("remote command killed by signal %s", e.Signal)
	}
	return fmt.Sprintf("remote command exited with status %d", e.Code)
}

// Run runs script under /bin/sh on the host, feeding stdin and capturing
// stdout and stderr. It returns *ExitError for a non-zero exit; any other
// error is a transport failure. Cancelling ctx kills the remote command.
func (c *Client) Run(ctx context.Context, script string, stdin io.Reader) (stdout, stderr []byte, err error) {
	var out, errb bytes.Buffer
	err = c.Stream(ctx, script, stdin, &out, &errb)
	return out.Bytes(), errb.Bytes(), err
}

// Stream is Run with caller-provided output writers.
func (c *Client) Stream(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer) error {
	return c.stream(ctx, script, nil, stdin, stdout, stderr)
}

// stream runs script on a new session, on a pseudo-terminal when pty is
// not nil.
func (c *Client) stream(ctx context.Context, script string, pty *PTY, stdin io.Reader, stdout, stderr io.Writer) error {
	sess, end, err := c.openSession(ctx)
	if err != nil {
		return err
	}
	defer end()
	if pty != nil {
		if err := requestPTY(sess, *pty); err != nil {
			return fmt.Errorf("allocate a terminal on %s: %w", c.Target.Label(), err)
		}
	}
	// The gate stops late output from reaching the caller's writers once
	// Stream has returned on cancellation.
	gate := &gate{}
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, gate.wrap(stdout), gate.wrap(stderr)
	defer gate.close()
	if err := sess.Start(BootstrapCommand(script)); err != nil {
		return fmt.Errorf("start command on %s: %w", c.Target.Label(), err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	if pty != nil {
		stop := make(chan struct{})
		defer close(stop)
		go forwardResizes(sess, pty.Resize, stop)
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		// Best effort: sshd may not deliver the signal, and closing the
		// channel does not end a command that keeps its output open, so
		// the wait for the channel to wind down is bounded.
		_ = sess.Signal(xssh.SIGKILL)
		sess.Close()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		return fmt.Errorf("command on %s: %w", c.Target.Label(), ctx.Err())
	}
	var ee *xssh.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: ee.ExitStatus(), Signal: ee.Signal()}
	}
	if err != nil {
		return fmt.Errorf("command on %s: %w", c.Target.Label(), err)
	}
	return nil
}

// gate serialises writes and drops them once closed.
type gate struct {
	mu     sync.Mutex
	closed bool
}

func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

func (g *gate) wrap(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return gatedWriter{g: g, w: w}
}

type gatedWriter struct {
	g *gate
	w io.Writer
}

func (gw gatedWriter) Write(p []byte) (int, error) {
	gw.g.mu.Lock()
	defer gw.g.mu.Unlock()
	if gw.g.closed {
		return len(p), nil
	}
	return gw.w.Write(p)
}
