package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	return fmt.Sprintf("%s on %s failed: %s", e.Op, e.Host, msg)
}

// helperExit is the helper exiting non-zero with its reason on stderr: it
// ran to the end and said why it failed.
type helperExit struct {
	What, Host, Msg string
	Err             error // the *ssh.ExitError
}

func (e *helperExit) Error() string { return fmt.Sprintf("%s on %s failed: %s", e.What, e.Host, e.Msg) }
func (e *helperExit) Unwrap() error { return e.Err }

// callHelperOp runs one taskdir operation through `kandev-exec helper`.
func callHelperOp(ctx context.Context, c *ssh.Client, host string, helper remoteHelper, op string, req, resp any) error {
	in, err := taskdir.EncodeRequest(op, req)
	if err != nil {
		return err
	}
	return runHelper(ctx, c, host, helper, "helper "+op, []string{"helper"}, in, resp)
}

// callHelper runs one batched helper step with req as its JSON input.
func callHelper(ctx context.Context, c *ssh.Client, host string, helper remoteHelper, args []string, req, resp any) error {
	in, err := json.Marshal(req)
	if err != nil {
		return err
	}
	what := args
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			what = args[:i] // flags say nothing the reader needs
			break
		}
	}
	return runHelper(ctx, c, host, helper, strings.Join(what, " "), args, in, resp)
}

// runHelper runs the helper with in on stdin (where secrets may travel:
// never argv, never disk) and decodes its one JSON answer; what names the
// step in errors. The whole path to the helper is checked on the host
// first, in the same round trip (hostcheck.go): once every directory on
// it is the login user's alone, nobody else can swap the file between the
// check and the exec.
func runHelper(ctx context.Context, c *ssh.Client, host string, helper remoteHelper, what string, args []string, in []byte, resp any) error {
	cmd := guardScript(helper, `"$f"`) + `exec "$f"`
	for _, a := range args {
		cmd += " " + ssh.ShellQuote(a)
	}
	cmd = `f=` + ssh.ShellQuote(helper.path()) + "\n" + cmd
	out, errb, err := c.Run(ctx, cmd, bytes.NewReader(in))
	if err != nil {
		if re := refused(host, err, markers(out)); re != nil {
			return re
		}
		tail := strings.TrimPrefix(lastLines(strings.TrimSpace(string(errb)), 5), "error: ")
		var ee *ssh.ExitError
		if errors.As(err, &ee) && ee.Signal == "" && tail != "" {
			return &helperExit{What: what, Host: host, Msg: tail, Err: err}
		}
		if tail != "" {
			return fmt.Errorf("%s on %s: %w: %s", what, host, err, tail)
		}
		return fmt.Errorf("%s on %s: %w", what, host, err)
	}
	var env struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out, &env); err != nil {
		return fmt.Errorf("%s on %s: unreadable answer from the helper: %v", what, host, err)
	}
	if env.Error != nil || (env.OK != nil && !*env.OK) {
		re := &RemoteError{Host: host, Op: what}
		if env.Error != nil {
			re.Code, re.Message = env.Error.Code, env.Error.Message
		}
		return re
	}
	return json.Unmarshal(out, resp)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
