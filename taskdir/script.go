package taskdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/kdlbs/kandev-exec/internal/fsx"
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
	// Log names a file in the task dir's .kandev/ that keeps the whole
	// output, masked, up to logLimit bytes (replaced at each run).
	Log string `json:"log,omitempty"`
}

// RunScriptResult is how the script ended. A non-zero exit is a result,
// not an error: the caller decides what it means.
type RunScriptResult struct {
	ExitCode   int    `json:"exit_code"`
	TimedOut   bool   `json:"timed_out"`
	OutputTail string `json:"output_tail"` // the last whole lines of stdout+stderr within 4 KiB, redacted
}

const outputTail = 4 << 10

// logLimit bounds a script's log; maxLine bounds a line passed on (a
// longer one goes in pieces).
const (
	logLimit = 1 << 20
	maxLine  = 4 << 10
)

// RunScript runs `<shell> -l -c <script>` in dir (a login shell, so that
// nvm/asdf PATHs are there) and, on timeout, kills its process group.
// line (nil: none) gets each line of its output as it comes, masked.
func RunScript(ctx context.Context, req RunScriptRequest, line func(string)) (*RunScriptResult, error) {
	if req.Shell == "" || req.Script == "" {
		return nil, errorf(CodeBadRequest, "run-script needs a shell and a script")
	}
	if req.Log != "" && !ValidTaskDir(req.Log) {
		return nil, errorf(CodeBadRequest, "log %q is not a file name", req.Log)
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
	out := newScriptOutput(req.Redact, outputTail, line)
	if req.Log != "" {
		path := filepath.Join(dir, metaDir, req.Log)
		if out.log, err = fsx.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return nil, fsError("open", path, err)
		}
		defer out.log.Close()
	}
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

// scriptOutput masks the script's output, then keeps its last limit
// bytes, writes it to the log (bounded) and passes each line on: the
// stream is masked, not the pieces, so a secret cut in half by a
// boundary can never show its second half.
type scriptOutput struct {
	mu      sync.Mutex
	mask    *redact.Writer
	kept    []byte
	cut     bool // kept lost its start
	limit   int
	log     *os.File // nil: none
	logged  int
	partial []byte // after the last newline
	line    func(string)
}

func newScriptOutput(secrets []string, limit int, line func(string)) *scriptOutput {
	o := &scriptOutput{limit: limit, line: line}
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
		o.kept, o.cut = append(o.kept[:0], o.kept[len(o.kept)-o.limit:]...), true
	}
	o.writeLog(p)
	if o.line == nil {
		return
	}
	o.partial = append(o.partial, p...)
	for {
		switch i := bytes.IndexByte(o.partial, '\n'); {
		case i >= 0 && i <= maxLine:
			o.line(string(bytes.TrimSuffix(o.partial[:i], []byte("\r"))))
			o.partial = o.partial[i+1:]
		case len(o.partial) >= maxLine:
			o.line(string(o.partial[:maxLine]))
			o.partial = o.partial[maxLine:]
		default:
			return
		}
	}
}

// writeLog appends p to the log up to logLimit, then says once that the
// rest is not kept. A log that cannot be written is given up: the script
// and the tail do not depend on it.
func (o *scriptOutput) writeLog(p []byte) {
	if o.log == nil || o.logged > logLimit {
		return
	}
	room := logLimit - o.logged
	if len(p) > room {
		p = append(p[:room:room], fmt.Sprintf("\n[kandev-exec] the rest of the output is not kept: this log stops at %d bytes\n", logLimit)...)
	}
	if _, err := o.log.Write(p); err != nil {
		o.log = nil
	}
	o.logged += len(p)
}

// tail ends the stream and returns its last whole lines within limit
// bytes.
func (o *scriptOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.mask.Flush() // keep never fails
	if len(o.partial) > 0 && o.line != nil {
		o.line(string(o.partial))
	}
	t := o.kept[max(0, len(o.kept)-o.limit):]
	if o.cut || len(t) < len(o.kept) {
		if i := bytes.IndexByte(t, '\n'); i >= 0 {
			t = t[i+1:] // the first line lost its start
		}
	}
	return string(t)
}

type keepFunc func([]byte)

func (f keepFunc) Write(p []byte) (int, error) {
	f(p)
	return len(p), nil
}
