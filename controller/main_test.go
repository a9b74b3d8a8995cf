package controller

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMain lets the test binary be the controller: Start re-execs
// os.Executable() as `controller run --session-dir D`, and tests run
// `controller start` in a child to let the parent exit.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "controller" {
		os.Exit(helperMain(os.Args[2:]))
	}
	// Race-enabled controllers would otherwise sleep 1s at exit.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

func helperMain(args []string) int {
	var err error
	switch {
	case len(args) == 3 && args[0] == "run" && args[1] == "--session-dir":
		err = Run(args[2], os.Stdin)
	case len(args) == 1 && args[0] == "start":
		var req StartRequest
		if err = json.NewDecoder(os.Stdin).Decode(&req); err == nil {
			var resp *StartResponse
			if resp, err = Start(req); err == nil {
				err = json.NewEncoder(os.Stdout).Encode(resp)
			}
		}
	default:
		err = fmt.Errorf("unknown helper arguments %q", args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// session is a started controller and a client for it.
type session struct {
	req  StartRequest
	resp StartResponse
	c    *Client
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newRequest is a request for command in a fresh task dir.
func newRequest(t *testing.T, command string) StartRequest {
	t.Helper()
	task := filepath.Join(t.TempDir(), "tasks", "task-1")
	if err := os.MkdirAll(task, 0o700); err != nil {
		t.Fatal(err)
	}
	return StartRequest{SessionID: "sess-1", TaskID: "task-1", TaskDir: task,
		SessionDir: filepath.Join(task, ".kandev", "sessions", "sess-1"),
		Shell:      "sh", Command: command, Token: randomToken(t), StopGrace: "2s", Linger: "1m"}
}

// start starts a controller and makes sure it is gone when the test ends.
func start(t *testing.T, req StartRequest) *session {
	t.Helper()
	resp, err := Start(req)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { reap(t, req.SessionDir, resp.StartTime) })
	return &session{req: req, resp: *resp, c: NewClient(nil, resp.Port, req.Token)}
}

func reap(t *testing.T, dir string, startTime uint64) {
	id, err := KillIfOurs(dir, startTime)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("KillIfOurs: %v", err)
	}
	if id.Ours {
		t.Errorf("controller %d survived KillIfOurs", id.PID)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(t *testing.T, pid int) bool {
	t.Helper()
	_, ok, err := procStat(pid)
	if err != nil {
		t.Fatalf("procStat(%d): %v", pid, err)
	}
	return ok
}

func waitState(t *testing.T, s *session, state string) Status {
	t.Helper()
	var st Status
	waitFor(t, 5*time.Second, "state "+state, func() bool {
		var err error
		st, err = s.c.Status(ctxFor(t, 5*time.Second))
		return err == nil && st.State == state
	})
	return st
}

func readLog(t *testing.T, s *session) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.req.SessionDir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, 5*time.Second, path, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && len(b) > 0 && b[len(b)-1] == '\n' && json.Unmarshal(bytes.TrimSpace(b), &pid) == nil
	})
	return pid
}
