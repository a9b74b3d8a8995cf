package ssh

import (
	"context"
	"io"

	xssh "golang.org/x/crypto/ssh"
)

// WindowSize is a terminal's size in character cells.
type WindowSize struct {
	Width, Height int
}

// PTY is the pseudo-terminal a command gets on the host: the local
// terminal's type and size at the start, and its later sizes.
type PTY struct {
	Term string // $TERM on the host
	Size WindowSize
	// Resize carries each new size of the local window; they are
	// forwarded until the command ends.
	Resize <-chan WindowSize
}

// ptyModes are the line discipline settings asked for: the host's
// defaults, with echo on (the local terminal is raw, so the remote side
// echoes what is typed).
var ptyModes = xssh.TerminalModes{
	xssh.ECHO:          1,
	xssh.TTY_OP_ISPEED: 38400,
	xssh.TTY_OP_OSPEED: 38400,
}

// StreamPTY is Stream on a pseudo-terminal: the host merges the command's
// stdout and stderr into out, and stdin is what the user types. Cancelling
// ctx kills the remote command.
func (c *Client) StreamPTY(ctx context.Context, script string, pty PTY, stdin io.Reader, out io.Writer) error {
	return c.stream(ctx, script, &pty, stdin, out, out)
}

func requestPTY(sess *xssh.Session, p PTY) error {
	return sess.RequestPty(p.Term, p.Size.Height, p.Size.Width, ptyModes)
}

// forwardResizes sends each size from resize as a window-change request
// until stop is closed.
func forwardResizes(sess *xssh.Session, resize <-chan WindowSize, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			// A failure means the session is ending: stop tells.
			_ = sess.WindowChange(sz.Height, sz.Width)
		}
	}
}
