package controller

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// gateServer is a server whose agent has been reaped, whose group id is
// pgid, and whose signals are recorded instead of sent.
func gateServer(t *testing.T, pgid int, alive func(int) bool) (*server, *[]syscall.Signal, *sync.Mutex) {
	t.Helper()
	req := newRequest(t, "true")
	s, err := newServer(req.SessionDir, req)
	if err != nil {
		t.Fatal(err)
	}
	if s.log, err = os.Create(filepath.Join(t.TempDir(), logFile)); err != nil {
		t.Fatal(err)
	}
	s.logw.w = s.log
	t.Cleanup(func() { s.log.Close(); close(s.done) })
	s.grace = 100 * time.Millisecond
	s.agentPGID = pgid
	s.alive = alive
	var mu sync.Mutex
	var sent []syscall.Signal
	s.kill = func(pid int, sig syscall.Signal) error {
		mu.Lock()
		defer mu.Unlock()
		if pid != -pgid {
			t.Errorf("signalled %d, want -%d", pid, pgid)
		}
		sent = append(sent, sig)
		return nil
	}
	close(s.exited)
	return s, &sent, &mu
}

// stranger is an unrelated process leading its own group, as one that did
// setsid after the agent's group id was freed could.
func stranger(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestStopNeverSignalsReusedProcessGroup: once the reaped agent's group has
// been observed empty, a live group with the same id (a stranger's) is
// never signalled, by the stop at the end of the linger or any other.
func TestStopNeverSignalsReusedProcessGroup(t *testing.T) {
	t.Parallel()
	pgid := stranger(t)
	var observed atomic.Int32
	// The first look finds the agent's group empty; then the stranger holds the id.
	s, sent, mu := gateServer(t, pgid, func(g int) bool { return observed.Add(1) > 1 && groupAlive(g) })
	go s.watchGroup()
	waitFor(t, 5*time.Second, "the group marked gone", s.groupGone.Load)
	if !groupAlive(pgid) {
		t.Fatal("the stranger's group is not alive")
	}
	s.stop(s.grace)
	mu.Lock()
	defer mu.Unlock()
	if len(*sent) != 0 {
		t.Fatalf("signalled a reused process group: %v", *sent)
	}
	if !alive(t, pgid) {
		t.Fatal("the stranger died")
	}
	b, _ := os.ReadFile(s.log.Name())
	if strings.Contains(string(b), "SIGTERM") || strings.Contains(string(b), "SIGKILL") {
		t.Fatalf("log claims a signal:\n%s", b)
	}
}

// TestStopSignalsGroupStillObservedLive is the gate's other side: a group
// never observed empty is still the agent's and is stopped.
func TestStopSignalsGroupStillObservedLive(t *testing.T) {
	t.Parallel()
	pgid := stranger(t)
	s, sent, mu := gateServer(t, pgid, groupAlive)
	s.stop(s.grace)
	mu.Lock()
	defer mu.Unlock()
	if len(*sent) != 2 || (*sent)[0] != syscall.SIGTERM || (*sent)[1] != syscall.SIGKILL {
		t.Fatalf("signals %v, want SIGTERM then SIGKILL", *sent)
	}
}

// TestStopAfterAgentExitedSignalsNothing: an agent that exits at once
// leaves an empty group, and a later stop signals no group.
func TestStopAfterAgentExitedSignalsNothing(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "true"))
	waitState(t, s, StateExited)
	waitFor(t, 5*time.Second, "the empty group recorded", func() bool {
		return strings.Contains(readLog(t, s), "every process of the agent has ended")
	})
	if _, err := s.c.Stop(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if log := readLog(t, s); strings.Contains(log, "SIGTERM to agent process group") || strings.Contains(log, "SIGKILL to agent process group") {
		t.Fatalf("stop signalled the exited agent's group:\n%s", log)
	}
}
