package taskdir

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"syscall"

	"github.com/kdlbs/kandev-exec/internal/redact"
)

// RunScriptRequest runs a user script (a profile's prepare_script) in the
// profile's shell. Env arrives here, on the helper's stdin, so secrets
// never appear in a command line or on the host's disk.
type RunScriptRequest struct {
	Dir            string            `json:"dir"` // the task dir, absolute or ~-prefixed
	Shell          string            `json:"shell"`
	Script         string            `json:"script"`
	Env            map[string]string `json:"env,omitempty"`
	Redact         []string          `json:"redact,omitempty"` // values masked as *** in the output
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
}

// RunScriptResult is how the script ended. A non-zero exit is a result,
// not an error: the caller decides what it means.
type RunScriptResult struct {
	ExitCode   int    `json:"exit_code"`
	TimedOut   bool   `json:"timed_out"`
	OutputTail string `json:"output_tail"` // last 4 KiB of stdout+stderr, redacted
}

const outputTail = 4 << 10

// RunScript runs `<shell> -l -c <script>` in dir (a login shell, so that
// nvm/asdf PATHs are there) and, on timeout, kills its process group.
func RunScript(ctx context.Context, req RunScriptRequest) (*RunScriptResult, error) {
	if req.Shell == "" || req.Script == "" {
		return nil, errorf(CodeBadRequest, "run-script needs a shell and a script")
	}
	dir, err := expandPath(req.Dir)
	if err != nil {
		return nil, err
	}
	if err := CheckTaskDir(dir); err != nil {
		return nil, err
	}
	ctx, cancel := requestContext(ctx, req.TimeoutSeconds)
	defer cancel()
	// dir is the task dir: its lock keeps this script from running next
	// to another launch's prepare or script.
	release, err := LockTaskDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer release()
	cmd := GroupCommand(ctx, dir, req.Shell, "-l", "-c", req.Script)
	cmd.Env = Environ(req.Env)
	out := newScriptOutput(req.Redact, outputTail)
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	res := &RunScriptResult{TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded), OutputTail: out.tail()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal()) // as a shell reports it
		}
	case errors.Is(err, exec.ErrWaitDelay):
		// The script exited; only a leftover child held the output open.
	case err != nil:
		return nil, errorf(CodeIO, "run %s: %v", req.Shell, err)
	}
	return res, nil
}

// scriptOutput keeps the last limit bytes of the script's output, masked
// before they are kept: the stream is masked, not the tail, so a secret
// cut in half by the tail boundary can never show its second half.
type scriptOutput struct {
	mu    sync.Mutex
	mask  *redact.Writer
	kept  []byte
	limit int
}

func newScriptOutput(secrets []string, limit int) *scriptOutput {
	o := &scriptOutput{limit: limit}
	o.mask = redact.NewWriter(keepFunc(o.keep), secrets)
	return o
}

func (o *scriptOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mask.Write(p)
}

func (o *scriptOutput) keep(p []byte) {
	o.kept = append(o.kept, p...)
	if len(o.kept) > 2*o.limit {
		o.kept = append(o.kept[:0], o.kept[len(o.kept)-o.limit:]...)
	}
}

// tail ends the stream and returns its last limit bytes.
func (o *scriptOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.mask.Flush() // keep never fails
	return string(o.kept[max(0, len(o.kept)-o.limit):])
}

type keepFunc func([]byte)

func (f keepFunc) Write(p []byte) (int, error) {
	f(p)
	return len(p), nil
}
