// Package remote is the kandev-exec helper on a host: its path checked,
// put in place, and talked to. Before the helper can be trusted only
// /bin/sh checks the host (hostcheck.go); the helper's state and
// handshake are read from marker lines (helper_check.go); a missing or
// stale copy is uploaded under a local lock per host and binary
// (helper_upload.go, helper_sftp.go); then the helper serves the
// protocol of helper/protocol over one SSH command (converse.go, Call);
// this package is the client half, the helper package the server.
package remote

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// Error is a failure the helper reported on the host.
type Error struct {
	Host, Op, Code, Message string
}

// remoteCodes says in words what a helper error code means.
var remoteCodes = map[string]string{
	taskdir.CodeOriginMismatch: "origin mismatch",
	taskdir.CodeOwnerMismatch:  "owner mismatch",
	taskdir.CodeVerifyFailed:   "checkout verification failed",
	taskdir.CodeTimeout:        "timed out",
	taskdir.CodeUnsafePath:     "unsafe path",
	taskdir.CodeUnsafeCheckout: "checkout refused, it would lose work",
	taskdir.CodeBusy:           "task directory busy",
	taskdir.CodeNotPrivate:     "refusing a path another user could change",
}

func (e *Error) Error() string {
	msg := e.Message
	if words := remoteCodes[e.Code]; words != "" {
		msg = words + ": " + msg
	}
	return fmt.Sprintf("%s on %s failed: %s", strings.ReplaceAll(e.Op, "-", " "), e.Host, msg)
}

// helperExit is the helper exiting non-zero with its reason on stderr: it
// ran to the end and said why it failed.
type helperExit struct {
	What, Host, Msg string
	Err             error // the *ssh.ExitError
}

func (e *helperExit) Error() string {
	return fmt.Sprintf("%s on %s failed: %s", strings.ReplaceAll(e.What, "-", " "), e.Host, e.Msg)
}
func (e *helperExit) Unwrap() error { return e.Err }

// Call runs one operation of the helper protocol (helper/protocol) on
// the host; progress, if not nil, gets the helper's progress lines.
func Call(ctx context.Context, c *ssh.Client, host string, helper Helper, op string, req, resp any, progress ...func(protocol.Progress)) error {
	in, err := protocol.EncodeRequest(op, req)
	if err != nil {
		return err
	}
	var pf func(protocol.Progress)
	if len(progress) > 0 {
		pf = progress[0]
	}
	return runHelper(ctx, c, host, helper, op, in, resp, pf)
}

// runHelper runs the helper with in on stdin (where secrets may travel:
// never argv, never disk) and decodes its one JSON answer; what names the
// step in errors. The whole path to the helper is checked on the host
// first, in the same command (ServeScript).
func runHelper(ctx context.Context, c *ssh.Client, host string, helper Helper, op string, in []byte, resp any, progress func(protocol.Progress)) error {
	cv, err := Converse(ctx, c, host, ServeScript(helper), op, in, ProbeTimeout)
	if err != nil {
		return err
	}
	if !cv.Served {
		return fmt.Errorf("%s on %s: the helper was not started", op, host)
	}
	if !protocol.Cancellable(op) {
		cv.CloseInput() // nothing to ask it after: it exits once it has answered
	}
	err = cv.Next(0, resp, progress) // Finish then closes the input a cancel needed
	if ferr := cv.Finish(ProbeTimeout); err == nil && ferr != nil {
		err = cv.failed(op, ferr)
	}
	return err
}

// ServeScript checks the whole path to the helper (hostcheck.go) and
// execs it to serve requests: once every directory on the path is the
// login user's alone, nobody else can swap the file between the check
// and the exec.
func ServeScript(h Helper) string {
	return `f=` + shquote.Quote(h.path()) + "\n" + guardScript(h, `"$f"`) + "echo " + serveMarker + "\nexec \"$f\" serve\n"
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
