package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// RemoteError is a failure the helper reported on the host.
type RemoteError struct {
	Host, Op, Code, Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: %s failed on the host: %s", e.Host, e.Op, e.Message)
}

// callHelperOp runs one taskdir operation through `kandev-exec helper`.
func callHelperOp(ctx context.Context, c *ssh.Client, host, helper, op string, req, resp any) error {
	in, err := taskdir.EncodeRequest(op, req)
	if err != nil {
		return err
	}
	return runHelper(ctx, c, host, helper, []string{"helper"}, in, resp)
}

// callHelper runs one batched helper step with req as its JSON input.
func callHelper(ctx context.Context, c *ssh.Client, host, helper string, args []string, req, resp any) error {
	in, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return runHelper(ctx, c, host, helper, args, in, resp)
}

// runHelper runs the helper with in on stdin (where secrets may travel:
// never argv, never disk) and decodes its one JSON answer.
func runHelper(ctx context.Context, c *ssh.Client, host, helper string, args []string, in []byte, resp any) error {
	cmd := ssh.ShellQuote(helper)
	for _, a := range args {
		cmd += " " + ssh.ShellQuote(a)
	}
	out, errb, err := c.Run(ctx, cmd, bytes.NewReader(in))
	if err != nil {
		if tail := strings.TrimSpace(string(errb)); tail != "" {
			return fmt.Errorf("%s: %s: %w: %s", host, strings.Join(args, " "), err, lastLines(tail, 5))
		}
		return fmt.Errorf("%s: %s: %w", host, strings.Join(args, " "), err)
	}
	var env struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out, &env); err != nil {
		return fmt.Errorf("%s: %s: unreadable answer from the helper: %v", host, strings.Join(args, " "), err)
	}
	if env.Error != nil || (env.OK != nil && !*env.OK) {
		re := &RemoteError{Host: host, Op: strings.Join(args, " ")}
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
