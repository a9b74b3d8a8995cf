package controller

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// swapRunCommand makes Start exec /bin/sh -c script instead of the controller.
func swapRunCommand(t *testing.T, script string) {
	old := runCommand
	runCommand = func(string) (string, []string, error) { return "/bin/sh", []string{"-c", script}, nil }
	t.Cleanup(func() { runCommand = old })
}

func TestStartReportsEarlyExit(t *testing.T) {
	swapRunCommand(t, "exit 4")
	// The exit ends the wait, not the ready deadline (that error says "not ready after").
	_, err := Start(newRequest(t, "true"))
	if err == nil || !strings.Contains(err.Error(), "exited before reporting ready") || !strings.Contains(err.Error(), "exit status 4") {
		t.Fatalf("Start: %v", err)
	}
}

func TestStartKillsControllerThatIsNeverReady(t *testing.T) {
	pidPath := filepath.Join(t.TempDir(), "pid")
	swapRunCommand(t, "echo $$ > "+pidPath+"; exec sleep 30")
	old := readyTimeout
	readyTimeout = 300 * time.Millisecond
	t.Cleanup(func() { readyTimeout = old })
	_, err := Start(newRequest(t, "true"))
	if err == nil || !strings.Contains(err.Error(), "not ready after 300ms") {
		t.Fatalf("Start: %v", err)
	}
	if pid := readPIDFile(t, pidPath); alive(t, pid) {
		t.Fatal("a controller that never became ready was left running")
	}
}

func TestStartRejectsBadRequests(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*StartRequest){
		"relative session dir": func(r *StartRequest) { r.SessionDir = "sessions/x" },
		"no token":             func(r *StartRequest) { r.Token = "" },
		"bad env key":          func(r *StartRequest) { r.Env = map[string]string{"A=B": "v"} },
		"bad grace":            func(r *StartRequest) { r.StopGrace = "soon" },
	} {
		req := newRequest(t, "true")
		mutate(&req)
		if _, err := Start(req); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := os.Stat(req.SessionDir); err == nil {
			t.Errorf("%s: session dir created", name)
		}
	}
}

func TestAgentThatCannotStart(t *testing.T) {
	t.Parallel()
	req := newRequest(t, "true")
	req.Shell = "/nonexistent/shell"
	_, err := Start(req)
	if err == nil || !strings.Contains(err.Error(), "start agent") {
		t.Fatalf("Start: %v", err)
	}
	st, err := ReadStatusFile(req.SessionDir)
	if err != nil || st.State != StateExited || !strings.Contains(st.Error, "start agent") || st.ExitCode != nil {
		t.Fatalf("status.json %+v %v", st, err)
	}
	pid, _ := readPID(req.SessionDir)
	waitFor(t, 5*time.Second, "controller exit", func() bool { return !alive(t, pid) })
}

func TestPIDFileBeforePort(t *testing.T) {
	t.Parallel()
	// A controller that cannot write its port has already written its pid.
	req := newRequest(t, "sleep 30")
	if err := os.MkdirAll(filepath.Join(req.SessionDir, portFile, "blocker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(req); err == nil {
		t.Fatal("Start succeeded without a port file")
	}
	if _, err := readPID(req.SessionDir); err != nil {
		t.Fatalf("no pid file after a failed port write: %v", err)
	}

	s := start(t, newRequest(t, "sleep 30"))
	pidInfo, err1 := os.Stat(filepath.Join(s.req.SessionDir, pidFile))
	portInfo, err2 := os.Stat(filepath.Join(s.req.SessionDir, portFile))
	if err1 != nil || err2 != nil || pidInfo.ModTime().After(portInfo.ModTime()) {
		t.Fatalf("pid file %v (%v) not older than port file %v (%v)", pidInfo, err1, portInfo, err2)
	}
	if b, _ := os.ReadFile(filepath.Join(s.req.SessionDir, portFile)); strings.TrimSpace(string(b)) != strconv.Itoa(s.resp.Port) {
		t.Fatalf("port file %q, started on %d", b, s.resp.Port)
	}
}

func TestSecondControllerRefused(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	_, err := Start(s.req)
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Start: %v", err)
	}
	if id, err := Probe(s.req.SessionDir, s.resp.StartTime); err != nil || !id.Ours {
		t.Fatalf("first controller lost its pid file: %+v %v", id, err)
	}
	if _, err := s.c.Health(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestExitsWhenSessionDirRemoved(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	agent := waitState(t, s, StateRunning).AgentPID
	if err := os.RemoveAll(s.req.SessionDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 8*time.Second, "controller and agent exit", func() bool {
		return !alive(t, s.resp.PID) && !alive(t, agent)
	})
}

func TestLingerThenExit(t *testing.T) {
	t.Parallel()
	req := newRequest(t, "exit 0")
	req.Linger = "300ms"
	s := start(t, req)
	waitFor(t, 5*time.Second, "controller exit after linger", func() bool { return !alive(t, s.resp.PID) })
	st, err := ReadStatusFile(req.SessionDir)
	if err != nil || st.State != StateExited || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("status.json %+v %v", st, err)
	}
	if log := readLog(t, s); !strings.Contains(log, "linger 300ms passed") {
		t.Fatalf("log:\n%s", log)
	}
}
