package taskdir

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
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
	cmd.Env = os.Environ()
	for k, v := range req.Env {
		cmd.Env = append(cmd.Env, k+"="+v) // later entries win
	}
	out := newRedactor(req.Redact, outputTail)
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

// redactor masks secrets in a stream before keeping its tail. It masks
// the stream, not the tail, so a secret cut in half by the tail boundary
// can never show its second half; bytes that might still begin a secret
// wait in pending until the next write (or the end) decides them.
type redactor struct {
	mu      sync.Mutex
	secrets [][]byte // longest first, so the longest match wins
	pending []byte
	kept    []byte
	limit   int
}

func newRedactor(secrets []string, limit int) *redactor {
	r := &redactor{limit: limit}
	for _, s := range secrets {
		if s != "" {
			r.secrets = append(r.secrets, []byte(s))
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

func (r *redactor) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, p...)
	r.drain(false)
	return len(p), nil
}

// drain scans pending, masking each secret and keeping the other bytes,
// up to the first position where a secret might still complete.
func (r *redactor) drain(final bool) {
	p := r.pending
	start, i := 0, 0
	for i < len(p) {
		n, undecided := r.secretAt(p[i:], final)
		if undecided {
			break
		}
		if n == 0 {
			i++
			continue
		}
		r.keep(p[start:i])
		r.keep([]byte("***"))
		i += n
		start = i
	}
	r.keep(p[start:i])
	r.pending = append(r.pending[:0], p[i:]...)
}

// secretAt returns the length of the longest secret p starts with, or
// undecided when p is too short to tell yet.
func (r *redactor) secretAt(p []byte, final bool) (n int, undecided bool) {
	for _, s := range r.secrets {
		switch {
		case bytes.HasPrefix(p, s):
			return len(s), false
		case !final && len(p) < len(s) && bytes.HasPrefix(s, p):
			return 0, true
		}
	}
	return 0, false
}

func (r *redactor) keep(p []byte) {
	r.kept = append(r.kept, p...)
	if len(r.kept) > 2*r.limit {
		r.kept = append(r.kept[:0], r.kept[len(r.kept)-r.limit:]...)
	}
}

func (r *redactor) tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drain(true)
	return string(r.kept[max(0, len(r.kept)-r.limit):])
}
