package ssh

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	xssh "golang.org/x/crypto/ssh"
)

// StreamEager is Stream without waiting for the server to accept the
// command before stdin flows: the command and the first bytes of stdin
// leave together, one round trip sooner. sshd does not report a command
// it fails to start when asked this way, so a command that writes
// nothing (stdout or stderr) within firstOutput is given up as not
// started: it is for scripts that print something at once.
func (c *Client) StreamEager(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer, firstOutput time.Duration) error {
	var ch xssh.Channel
	var reqs <-chan *xssh.Request
	release, err := c.Session(ctx, func() (err error) { ch, reqs, err = c.OpenChannel("session", nil); return err })
	if err != nil {
		return fmt.Errorf("open session on %s: %w", c.Target.Label(), err)
	}
	defer release()
	defer ch.Close()
	exec := xssh.Marshal(struct{ Command string }{BootstrapCommand(script)})
	// Sent before any stdin: sshd drops data that reaches a session
	// before its command.
	if _, err := ch.SendRequest("exec", false, exec); err != nil {
		return fmt.Errorf("start command on %s: %w", c.Target.Label(), err)
	}
	gate := &gate{}
	defer gate.close()
	heard := make(chan struct{})
	var once sync.Once
	hear := func() { once.Do(func() { close(heard) }) }

	status := make(chan error, 1)
	go func() { status <- exitStatus(reqs) }()
	go func() {
		if stdin != nil {
			_, _ = io.Copy(ch, stdin)
		}
		_ = ch.CloseWrite()
	}()
	copied := make(chan error, 2)
	for _, o := range []struct {
		w io.Writer
		r io.Reader
	}{{stdout, ch}, {stderr, ch.Stderr()}} {
		w := o.w
		if w == nil {
			w = io.Discard
		}
		go func() {
			_, err := io.Copy(hearing{gate.wrap(w), hear}, o.r)
			copied <- err
		}()
	}
	done := make(chan error, 1)
	go func() {
		err := <-status
		for range 2 {
			if cerr := <-copied; err == nil {
				err = cerr
			}
		}
		done <- err
	}()

	wait := time.NewTimer(firstOutput)
	defer wait.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				var ee *ExitError
				if errors.As(err, &ee) {
					return ee
				}
				return fmt.Errorf("command on %s: %w", c.Target.Label(), err)
			}
			return nil
		case <-heard:
			heard = nil
			wait.Stop()
		case <-wait.C:
			kill(ch, done)
			return fmt.Errorf("command on %s: nothing came back within %s: the host did not start it", c.Target.Label(), firstOutput)
		case <-ctx.Done():
			kill(ch, done)
			return fmt.Errorf("command on %s: %w", c.Target.Label(), ctx.Err())
		}
	}
}

// kill is Stream's best effort on cancellation: the signal may not be
// delivered, and a command that keeps its output open keeps the channel,
// so the wait for it to wind down is bounded.
func kill(ch xssh.Channel, done <-chan error) {
	_, _ = ch.SendRequest("signal", false, xssh.Marshal(struct{ Signal string }{string(xssh.SIGKILL)}))
	ch.Close()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// hearing is a writer that calls heard on its first write.
type hearing struct {
	w     io.Writer
	heard func()
}

func (h hearing) Write(p []byte) (int, error) {
	h.heard()
	return h.w.Write(p)
}

// errNoStatus is a command whose channel closed without an exit status
// or signal.
var errNoStatus = errors.New("the remote command ended without an exit status")

// exitStatus reads a session's requests until the channel closes, and
// returns how its command ended: nil, *ExitError, or errNoStatus.
func exitStatus(reqs <-chan *xssh.Request) error {
	code, signal := -1, ""
	for r := range reqs {
		switch r.Type {
		case "exit-status":
			if len(r.Payload) >= 4 {
				code = int(binary.BigEndian.Uint32(r.Payload))
			}
		case "exit-signal":
			var sig struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}
			if xssh.Unmarshal(r.Payload, &sig) == nil {
				signal = sig.Signal
			}
		default:
			if r.WantReply {
				_ = r.Reply(false, nil)
			}
		}
	}
	switch {
	case signal != "":
		// As a shell reports it; x/crypto's Wait does the same.
		return &ExitError{Code: 128 + int(unix.SignalNum("SIG"+signal)), Signal: signal}
	case code == 0:
		return nil
	case code > 0:
		return &ExitError{Code: code}
	}
	return errNoStatus
}
