package executor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// deadLauncher is this machine and boot with a pid that has exited.
func deadLauncher(t *testing.T) *state.Holder {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	h := state.Self()
	h.PID = cmd.ProcessState.Pid()
	return &h
}

// interrupt rewrites a session as a launch killed after asking for its
// controller (startAgo ago, or never when negative) leaves it: starting,
// nothing about the controller recorded.
func interrupt(t *testing.T, e *Executor, id string, l *state.Holder, startAgo time.Duration) {
	t.Helper()
	var at *time.Time
	if startAgo >= 0 {
		v := time.Now().UTC().Add(-startAgo)
		at = &v
	}
	// Written as a crashed launch leaves it, past the transition table:
	// no live process would move a session back to starting.
	ctx := context.Background()
	x, rec, err := records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, id)
	if err != nil {
		t.Fatal(err)
	}
	x.State, x.PID, x.StartTime, x.RemotePort, x.SessionDir, x.ExitCode, x.EndedAt, x.Launcher = records.SessionStarting, 0, 0, 0, "", nil, nil, l
	x.ControllerStartAt, x.Error = at, ""
	data, _ := json.Marshal(x)
	if _, err := e.cfg.Store.Update(ctx, records.KindSession, id, rec.Revision, data, state.Event{Type: "test.interrupt"}); err != nil {
		t.Fatal(err)
	}
}

func recoverOne(t *testing.T, e *Executor, taskID string, remote bool) (*records.Session, []*records.Session, error) {
	t.Helper()
	ctx := context.Background()
	task, _, err := e.GetTask(ctx, taskID)
	if err != nil {
		t.Fatal(err)
	}
	_, pending, rerr := e.RecoverTasks(ctx, []*records.Task{task}, remote)
	s, _, err := e.GetSession(ctx, task.Sessions[len(task.Sessions)-1])
	if err != nil {
		t.Fatal(err)
	}
	return s, pending, rerr
}

// A controller that answers with the saved token is adopted; one that is
// gone is settled from what it wrote; a launcher still alive is left be.
func TestRecoverInterruptedLaunch(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	want := *s

	// A launch still under way holds the task's claim: left be.
	interrupt(t, f.exec, s.ID, launcher(), 0)
	held, err := records.Acquire(ctx, f.exec.cfg.Store, records.KindTask, task.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, pending, err := recoverOne(t, f.exec, task.ID, true); err != nil || got.State != records.SessionStarting || len(pending) != 0 {
		t.Fatalf("live launcher: %s, %v, %v", got.State, pending, err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}

	interrupt(t, f.exec, s.ID, deadLauncher(t), 0)
	if got, pending, err := recoverOne(t, f.exec, task.ID, false); err != nil || got.State != records.SessionStarting || len(pending) != 1 {
		t.Fatalf("local only: %s, %v, %v", got.State, pending, err)
	}
	got, _, err := recoverOne(t, f.exec, task.ID, true)
	if err != nil || got.State != records.SessionRunning || got.PID != want.PID || got.StartTime != want.StartTime ||
		got.RemotePort != want.RemotePort || got.SessionDir != want.SessionDir {
		t.Fatalf("adopt: %+v, %v\nwant %+v", got, err, want)
	}
	if _, err := f.exec.StopSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}

	// Gone after its agent exited 7: the status file tells.
	task, s, err = f.exec.Resume(ctx, task.ID, []string{"sh", "-c", "exit 7"}, Reports{})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s.SessionDir, controller.StateExited)
	if err := syscall.Kill(s.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, s.PID)
	interrupt(t, f.exec, s.ID, deadLauncher(t), 0)
	got, _, err = recoverOne(t, f.exec, task.ID, true)
	if err != nil || got.State != records.SessionExited || got.ExitCode == nil || *got.ExitCode != 7 || got.SessionDir != s.SessionDir {
		t.Fatalf("gone after exit: %+v, %v", got, err)
	}

	// No controller in its session dir: while a controller start may still
	// be at work on the host, nothing is decided; after that, failed.
	if err := os.RemoveAll(s.SessionDir); err != nil {
		t.Fatal(err)
	}
	interrupt(t, f.exec, s.ID, deadLauncher(t), 0)
	if got, _, err = recoverOne(t, f.exec, task.ID, true); err == nil || !strings.Contains(err.Error(), "may still finish") || got.State != records.SessionStarting {
		t.Fatalf("start just asked for: %s, %v", got.State, err)
	}
	interrupt(t, f.exec, s.ID, deadLauncher(t), 2*controllerStartBound)
	got, _, err = recoverOne(t, f.exec, task.ID, true)
	if err != nil || got.State != records.SessionFailed || !strings.Contains(got.Error, "before its controller started") {
		t.Fatalf("never started: %+v, %v", got, err)
	}
	// Never asked for a controller: settled from the records alone.
	interrupt(t, f.exec, s.ID, deadLauncher(t), -1)
	got, pending, err := recoverOne(t, f.exec, task.ID, false)
	if err != nil || got.State != records.SessionFailed || len(pending) != 0 || !strings.Contains(got.Error, "before any controller start") {
		t.Fatalf("no controller start: %+v, %v, %v", got, pending, err)
	}

	// The host cannot be asked: nothing changes, and the error says so.
	f.srv.Stop()
	interrupt(t, f.exec, s.ID, deadLauncher(t), 0)
	got, _, err = recoverOne(t, f.exec, task.ID, true)
	if err == nil || !strings.Contains(err.Error(), "cannot tell") || got.State != records.SessionStarting {
		t.Fatalf("unreachable: %s, %v", got.State, err)
	}
}

func waitState(t *testing.T, dir, state string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := controller.ReadStatusFile(dir); err == nil && st.State == state {
			return
		}
	}
	t.Fatalf("%s never reached %s", filepath.Join(dir, "status.json"), state)
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	t.Fatalf("pid %d still alive", pid)
}
