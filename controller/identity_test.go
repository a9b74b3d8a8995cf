package controller

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestProbeAndKillRefuseStranger(t *testing.T) {
	t.Parallel()
	stranger := exec.Command("sleep", "30")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Process.Kill(); stranger.Wait() })
	pid := stranger.Process.Pid
	startTime, _, err := procStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "sessions", "sess-x")
	if err := os.MkdirAll(fake, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, pidFile), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := Probe(fake, startTime)
	if err != nil || !id.Alive || id.Ours || id.PID != pid || id.StartTime != startTime {
		t.Fatalf("Probe of a stranger: %+v %v", id, err)
	}
	if id, err = KillIfOurs(fake, startTime); err != nil || id.Ours {
		t.Fatalf("KillIfOurs of a stranger: %+v %v", id, err)
	}
	// A process dies of the first fatal signal sent to it: had KillIfOurs
	// signalled the stranger, ours would not be the one it ends by.
	_ = stranger.Process.Signal(syscall.SIGUSR1)
	_ = stranger.Wait()
	if ws, _ := stranger.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGUSR1 {
		t.Fatalf("the stranger was signalled: it ended with %v", stranger.ProcessState)
	}
	if _, err := Probe(t.TempDir(), startTime); !os.IsNotExist(err) {
		t.Fatalf("Probe without a pid file: %v", err)
	}
}

func TestProbeAndKillOurController(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	dir := s.req.SessionDir
	id, err := Probe(dir, s.resp.StartTime)
	if err != nil || !id.Ours || !id.Alive || id.PID != s.resp.PID {
		t.Fatalf("Probe of our controller: %+v %v", id, err)
	}
	// A recorded start time that differs is a reused pid: not ours.
	if id, err = Probe(dir, s.resp.StartTime+1); err != nil || id.Ours || !id.Alive {
		t.Fatalf("Probe with another start time: %+v %v", id, err)
	}
	if id, err = KillIfOurs(dir, s.resp.StartTime+1); err != nil || id.Ours {
		t.Fatalf("KillIfOurs with another start time: %+v %v", id, err)
	}
	if _, err := s.c.Health(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("controller hurt by a refused kill: %v", err)
	}
	if id, err = Probe(dir+"-other", s.resp.StartTime); err == nil {
		t.Fatalf("Probe of another session dir: %+v", id)
	}

	agent := waitState(t, s, StateRunning).AgentPID
	if id, err = KillIfOurs(dir, s.resp.StartTime); err != nil || id.Alive || id.Ours {
		t.Fatalf("KillIfOurs: %+v %v", id, err)
	}
	if alive(t, agent) {
		t.Fatal("agent survived its controller's SIGTERM")
	}
	if st, err := ReadStatusFile(dir); err != nil || st.State != StateStopped {
		t.Fatalf("status.json after SIGTERM: %+v %v", st, err)
	}
}

// A dead controller whose agent's group lives on reports it as an orphan,
// and stops doing so once the group is gone.
func TestProbeReportsOrphanAgent(t *testing.T) {
	t.Parallel()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	agent := exec.Command("sleep", "30")
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(gone.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONAtomic(dir, statusFile, Status{State: StateRunning, AgentPID: agent.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	if id, err := Probe(dir, 1); err != nil || id.Alive || id.Orphan != agent.Process.Pid {
		t.Fatalf("Probe with a live agent group: %+v %v", id, err)
	}
	agent.Process.Kill()
	agent.Wait()
	if id, err := Probe(dir, 1); err != nil || id.Orphan != 0 {
		t.Fatalf("Probe once the group is gone: %+v %v", id, err)
	}
}

func TestIsControllerArgs(t *testing.T) {
	dir := "/home/u/.kandev/tasks/t/.kandev/sessions/s1"
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"/bin/kandev-exec", "controller", "run", "--session-dir", dir}, true},
		{[]string{"/bin/kandev-exec", "controller", "run", "--session-dir=" + dir}, true},
		{[]string{"/bin/kandev-exec", "controller", "run", "--session-dir", dir + "0"}, false},
		{[]string{"/bin/kandev-exec", "controller", "run", "--session-dir", "/home/u"}, false},
		{[]string{"sleep", dir}, false},
		{[]string{"sh", "-c", "controller " + dir}, false},
	} {
		if got := isControllerArgs(tc.args, dir); got != tc.want {
			t.Errorf("isControllerArgs(%q) = %v", tc.args, got)
		}
	}
}
