package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kdlbs/kandev-exec/internal/ascii"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// StartRequest is what `controller start` reads on stdin.
type StartRequest struct {
	SessionID  string            `json:"session_id"`
	TaskID     string            `json:"task_id"`
	SessionDir string            `json:"session_dir"` // absolute: <task dir>/.kandev/sessions/<id>
	TaskDir    string            `json:"task_dir"`    // absolute; the agent's working dir
	Shell      string            `json:"shell"`       // the agent runs as `<shell> -l -c <command>`
	Command    string            `json:"command"`     // shell command line, already quoted
	Env        map[string]string `json:"env"`         // added to the agent's env; never on disk or argv
	Token      string            `json:"token"`       // per-session bearer token; never on disk or argv
	StopGrace  string            `json:"stop_grace"`  // default "10s"
	Linger     string            `json:"linger"`      // serving time after the agent exited, default "10m"
	// MaxRuntime and IdleTimeout bound the agent ("" or "0s": none): at
	// the bound, or after that long without output, it is stopped.
	MaxRuntime  string `json:"max_runtime,omitempty"`
	IdleTimeout string `json:"idle_timeout,omitempty"`
	// Require is the program the command starts with, when known: Start
	// refuses, before anything is detached, if the agent's login shell
	// cannot find it.
	Require string `json:"require,omitempty"`
	// Redact are values (secrets the env carries) masked as *** in the
	// agent's output before it reaches controller.log; never on disk or argv.
	Redact []string `json:"redact,omitempty"`
}

// StartResponse is what `controller start` prints once the controller is
// ready. PID and StartTime identify the controller for Probe and KillIfOurs.
type StartResponse struct {
	PID        int    `json:"pid"`
	Port       int    `json:"port"`
	StartTime  uint64 `json:"start_time"`
	SessionDir string `json:"session_dir"`
	// MaxRuntimeAt is when the agent is stopped, when bounded.
	MaxRuntimeAt *time.Time `json:"max_runtime_at,omitempty"`
}

// runPayload is what Start writes to the controller's stdin: the request,
// and the descriptor on which to report readiness.
type runPayload struct {
	StartRequest
	ReadyFD int `json:"ready_fd,omitempty"`
}

// readyMsg is the controller's one message on the ready pipe.
type readyMsg struct {
	StartResponse
	Error string `json:"error,omitempty"`
}

// runCommand is the program Start re-execs as the controller; tests swap it.
var runCommand = func(sessionDir string) (string, []string, error) {
	exe, err := os.Executable()
	return exe, []string{"controller", "run", "--session-dir", sessionDir}, err
}

// readyTimeout bounds how long Start waits for the controller to be ready.
var readyTimeout = 15 * time.Second

// Start launches a detached controller for req and returns once it is
// ready. The request travels over a pipe, never argv, env or disk. If the
// controller does not report ready in time it is killed.
func Start(req StartRequest) (*StartResponse, error) {
	if _, _, err := req.normalize(); err != nil {
		return nil, err
	}
	// The task dir and every directory above it must be the login user's
	// alone before anything is created or run there.
	dir, err := taskdir.EnsureSessionDir(req.TaskDir, req.SessionID)
	if err != nil {
		return nil, fmt.Errorf("start controller: %w", err)
	}
	if dir != req.SessionDir {
		return nil, fmt.Errorf("start request: session_dir %s is not %s", req.SessionDir, dir)
	}
	if err := req.checkRequire(); err != nil {
		return nil, err
	}
	path, args, err := runCommand(req.SessionDir)
	if err != nil {
		return nil, fmt.Errorf("start controller: %w", err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = "/" // pin no directory of the caller's
	cmd.Stdin = reqR
	cmd.ExtraFiles = []*os.File{readyW} // fd 3
	// Its own session: it outlives the SSH connection and gets no SIGHUP.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	reqR.Close()
	readyW.Close()
	if err != nil {
		reqW.Close()
		readyR.Close()
		return nil, fmt.Errorf("start controller: %w", err)
	}
	resp, err := handshake(reqW, readyR, runPayload{StartRequest: req, ReadyFD: 3})
	if err != nil {
		_ = cmd.Process.Kill() // safe even if it already exited: the handle is a pidfd where supported
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case werr := <-waited:
			if werr != nil {
				err = fmt.Errorf("%w (controller: %v)", err, werr)
			}
		case <-time.After(2 * time.Second):
		}
		return nil, fmt.Errorf("start controller: %w", err)
	}
	// Reap it if it exits while we are still around (tests; the CLI exits now).
	go cmd.Wait()
	return &resp, nil
}

// handshake sends the request and reads the ready message, both bounded.
func handshake(reqW, readyR *os.File, p runPayload) (StartResponse, error) {
	defer reqW.Close()
	defer readyR.Close()
	deadline := time.Now().Add(readyTimeout)
	_ = reqW.SetWriteDeadline(deadline)
	_ = readyR.SetReadDeadline(deadline)
	if err := json.NewEncoder(reqW).Encode(p); err != nil {
		return StartResponse{}, handshakeError("send request", err)
	}
	reqW.Close()
	var m readyMsg
	if err := json.NewDecoder(readyR).Decode(&m); err != nil {
		return StartResponse{}, handshakeError("read ready message", err)
	}
	if m.Error != "" {
		return StartResponse{}, errors.New(m.Error)
	}
	return m.StartResponse, nil
}

func handshakeError(step string, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("controller not ready after %s", readyTimeout)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE):
		return errors.New("controller exited before reporting ready")
	}
	return fmt.Errorf("%s: %w", step, err)
}

// checkRequire looks the program up the way the agent will run: same
// shell as a login shell, same directory and environment. A missing agent
// binary is then one clear error at launch, not a session exiting 127.
func (r *StartRequest) checkRequire() error {
	if r.Require == "" {
		return nil
	}
	return taskdir.LookupProgram(context.Background(), r.Shell, r.TaskDir, taskdir.Environ(r.Env), r.Require)
}

var envKey = ascii.Word{First: ascii.Letters + "_", Rest: ascii.Alnum + "_"}

// normalize checks the request, cleans its paths and parses its durations.
// Error messages name fields and env keys, never values.
func (r *StartRequest) normalize() (grace, linger time.Duration, err error) {
	switch {
	case r.SessionID == "":
		return 0, 0, errors.New("start request: session_id is required")
	case !filepath.IsAbs(r.SessionDir):
		return 0, 0, errors.New("start request: session_dir must be absolute")
	case !filepath.IsAbs(r.TaskDir):
		return 0, 0, errors.New("start request: task_dir must be absolute")
	case r.Shell == "":
		return 0, 0, errors.New("start request: shell is required")
	case r.Command == "":
		return 0, 0, errors.New("start request: command is required")
	case r.Token == "":
		return 0, 0, errors.New("start request: token is required")
	}
	for k, v := range r.Env {
		if !envKey.MatchString(k) {
			return 0, 0, fmt.Errorf("start request: invalid env key %q", k)
		}
		if strings.ContainsRune(v, 0) {
			return 0, 0, fmt.Errorf("start request: env %s contains NUL", k)
		}
	}
	r.SessionDir, r.TaskDir = filepath.Clean(r.SessionDir), filepath.Clean(r.TaskDir)
	if grace, err = parseDuration("stop_grace", r.StopGrace, 10*time.Second); err != nil {
		return 0, 0, err
	}
	if grace <= 0 {
		return 0, 0, errors.New("start request: stop_grace must be positive")
	}
	if linger, err = parseDuration("linger", r.Linger, 10*time.Minute); err != nil {
		return 0, 0, err
	}
	if linger < 0 {
		return 0, 0, errors.New("start request: linger must not be negative")
	}
	if _, _, err := r.bounds(); err != nil {
		return 0, 0, err
	}
	return grace, linger, nil
}

// bounds are the request's max_runtime and idle_timeout (0: none).
func (r *StartRequest) bounds() (maxRuntime, idle time.Duration, err error) {
	if maxRuntime, err = parseDuration("max_runtime", r.MaxRuntime, 0); err != nil {
		return 0, 0, err
	}
	if idle, err = parseDuration("idle_timeout", r.IdleTimeout, 0); err != nil {
		return 0, 0, err
	}
	if maxRuntime < 0 || idle < 0 {
		return 0, 0, errors.New("start request: max_runtime and idle_timeout must not be negative")
	}
	return maxRuntime, idle, nil
}

func parseDuration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("start request: %s: %w", field, err)
	}
	return d, nil
}
