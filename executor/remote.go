package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/hostops"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// RemoteError is a failure the helper reported on the host.
type RemoteError struct {
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

func (e *RemoteError) Error() string {
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

// callHelperOp runs one operation of the helper protocol (hostops) on
// the host; progress, if not nil, gets the helper's progress lines.
func callHelperOp(ctx context.Context, c *ssh.Client, host string, helper remoteHelper, op string, req, resp any, progress ...func(hostops.Progress)) error {
	in, err := hostops.EncodeRequest(op, req)
	if err != nil {
		return err
	}
	var pf func(hostops.Progress)
	if len(progress) > 0 {
		pf = progress[0]
	}
	return runHelper(ctx, c, host, helper, op, in, resp, pf)
}

// runHelper runs the helper with in on stdin (where secrets may travel:
// never argv, never disk) and decodes its one JSON answer; what names the
// step in errors. The whole path to the helper is checked on the host
// first, in the same round trip (hostcheck.go): once every directory on
// it is the login user's alone, nobody else can swap the file between the
// check and the exec.
func runHelper(ctx context.Context, c *ssh.Client, host string, helper remoteHelper, op string, in []byte, resp any, progress func(hostops.Progress)) error {
	cmd := `f=` + ssh.ShellQuote(helper.path()) + "\n" + guardScript(helper, `"$f"`) + `exec "$f" serve`
	// The answer is read as it arrives, so progress lines reach the caller
	// while the operation runs; the output is kept too, for the guard's
	// refuse lines.
	pr, pw := io.Pipe()
	answered := make(chan error, 1)
	go func() {
		answered <- hostops.ReadAnswer(pr, resp, progress)
		io.Copy(io.Discard, pr)
	}()
	var out, errb bytes.Buffer
	err := c.Stream(ctx, cmd, bytes.NewReader(in), io.MultiWriter(pw, &limitedBuffer{b: &out, n: 64 << 10}), &errb)
	pw.Close()
	aerr := <-answered
	if err != nil {
		if re := refused(host, err, markers(out.Bytes())); re != nil {
			return re
		}
		tail := strings.TrimPrefix(lastLines(strings.TrimSpace(errb.String()), 5), "error: ")
		var ee *ssh.ExitError
		if errors.As(err, &ee) && ee.Signal == "" && tail != "" {
			return &helperExit{What: op, Host: host, Msg: tail, Err: err}
		}
		if tail != "" {
			return fmt.Errorf("%s on %s: %w: %s", op, host, err, tail)
		}
		return fmt.Errorf("%s on %s: %w", op, host, err)
	}
	var he *hostops.Error
	if errors.As(aerr, &he) {
		return &RemoteError{Host: host, Op: op, Code: he.Code, Message: he.Message}
	}
	if aerr != nil {
		return fmt.Errorf("%s on %s: %w", op, host, aerr)
	}
	return nil
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
