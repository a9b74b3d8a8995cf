package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
)

// waitFile polls until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// archivePending archives task and expects the attempt to stay pending
// with the reclamation failed for reason, the drain done and the host
// still admitted; it returns the task as left.
func (f *launchFixture) archivePending(t *testing.T, task *records.Task, reason string) *records.Task {
	t.Helper()
	ctx := context.Background()
	_, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	var pe *PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("archive: %v, want a pending cleanup", err)
	}
	got, _, err := f.exec.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	td := got.Teardown
	if got.Phase != records.PhaseCleanupPending || td.Drain != records.DrainDrained || td.Reclaim != records.ReclaimFailed ||
		!strings.Contains(td.Reason, reason) {
		t.Fatalf("task %s, drain %s, reclaim %s, reason %q; want cleanup_pending, drained, failed with %s", got.Phase, td.Drain, td.Reclaim, td.Reason, reason)
	}
	if h, _, err := f.exec.getHost(ctx, "prod"); err != nil || h.Status != records.HostAdmitted {
		t.Fatalf("host status %v (%v), want admitted", h.Status, err)
	}
	return got
}

// waitsForCommand launches a task and starts a command in its directory
// with run, which returns once the command has touched started; finish
// makes it write late.txt and end. The archive meanwhile is held off
// (in_use, retried, the directory there), and the one after keeps what
// it wrote. It returns the held-off archive's task.
func waitsForCommand(t *testing.T, run func(f *launchFixture, task *records.Task, started string) (finish func() error)) *records.Task {
	t.Helper()
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	finish := run(f, task, filepath.Join(t.TempDir(), "started"))

	got := f.archivePending(t, task, string(reclaim.InUse))
	if _, err := os.Stat(filepath.Join(task.TaskDir, "README")); err != nil {
		t.Fatalf("the directory while the command runs: %v", err)
	}

	if err := finish(); err != nil {
		t.Fatal(err)
	}
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	if err != nil || res.Phase != records.PhaseArchived || !strings.Contains(res.Reason, "untracked_files") {
		t.Fatalf("archive once the command ended: %+v, %v; want archived, untracked_files", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(task.TaskDir, "late.txt")); err != nil || string(b) != "late\n" {
		t.Fatalf("what the command wrote: %q, %v", b, err)
	}
	return got
}

// A `task exec` running in the task directory holds off the archive's
// removal (in_use, retried), however the command was started: what it
// writes after is not lost, and the next archive proves it (kept).
func TestArchiveWaitsForTaskExec(t *testing.T) {
	got := waitsForCommand(t, func(f *launchFixture, task *records.Task, started string) func() error {
		stdin, hold := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := f.exec.Exec(context.Background(), task.ID, []string{"sh", "-c", "touch " + started + "; read line; echo late > late.txt"}, stdin, io.Discard, io.Discard)
			done <- err
		}()
		waitFile(t, started)
		return func() error { hold.Close(); return <-done }
	})
	if !strings.Contains(got.Teardown.Reason, "(sh)") {
		t.Fatalf("reason %q does not name the command", got.Teardown.Reason)
	}
}

// A `task shell` (an interactive login shell on a terminal) holds it off
// just the same: what is typed into it after is not lost.
func TestArchiveWaitsForTaskShell(t *testing.T) {
	waitsForCommand(t, func(f *launchFixture, task *records.Task, started string) func() error {
		typed, keys := io.Pipe()
		done := make(chan error, 1)
		go func() {
			term := Terminal{PTY: ssh.PTY{Term: "dumb", Size: ssh.WindowSize{Width: 80, Height: 24}}, In: typed, Out: io.Discard}
			_, err := f.exec.ExecTerminal(context.Background(), task.ID, nil, term)
			done <- err
		}()
		fmt.Fprintf(keys, "touch %s\n", started)
		waitFile(t, started)
		return func() error {
			fmt.Fprint(keys, "echo late > late.txt; exit\n")
			return <-done
		}
	})
}

// An agent that left a daemon in its own session (setsid) is drained,
// but the daemon still works in the directory: the removal keeps it
// (in_use, naming pid and command), the host stays admitted.
func TestArchiveKeepsDirectoryOfASetsidDaemon(t *testing.T) {
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web",
		Command: []string{"sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > .kandev/daemon"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s.SessionDir, "exited")
	b, err := os.ReadFile(filepath.Join(task.TaskDir, ".kandev", "daemon"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	got := f.archivePending(t, task, string(reclaim.InUse))
	if want := fmt.Sprintf("pid %d (sleep)", pid); !strings.Contains(got.Teardown.Reason, want) {
		t.Fatalf("reason %q does not name %s", got.Teardown.Reason, want)
	}
	if _, err := os.Stat(filepath.Join(task.TaskDir, "README")); err != nil {
		t.Fatalf("the directory under the daemon: %v", err)
	}
}

// A removal stopped halfway (a file that cannot be unlinked) is finished
// by the next archive once the file can go, and only then: what was put
// into its leftover since keeps it.
func TestArchiveFinishesOnlyWhatAnInterruptedRemovalLeft(t *testing.T) {
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	for _, added := range []bool{false, true} {
		task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, s.SessionDir, "exited")
		trash := filepath.Join(filepath.Dir(task.TaskDir), ".reclaim."+filepath.Base(task.TaskDir))
		chattr(t, "+i", filepath.Join(task.TaskDir, "README"))
		t.Cleanup(func() { exec.Command("chattr", "-i", filepath.Join(trash, "README")).Run() })

		got := f.archivePending(t, task, string(reclaim.RemoveFailed))
		if len(got.Teardown.ReclaimRemains) == 0 {
			t.Fatal("the task does not keep what the removal left")
		}
		chattr(t, "-i", filepath.Join(trash, "README"))
		if added {
			if err := os.WriteFile(filepath.Join(trash, "notes.txt"), []byte("work\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
		if err != nil {
			t.Fatalf("archive again (added %v): %v", added, err)
		}
		switch {
		case !added && res.Phase != records.PhaseAbsent:
			t.Fatalf("archive again: %s (%s), want absent", res.Phase, res.Reason)
		case !added:
			if _, err := os.Lstat(trash); !os.IsNotExist(err) {
				t.Fatalf("the leftover after the archive: %v", err)
			}
		case res.Phase != records.PhaseArchived || res.Reclaim != records.ReclaimSkipped:
			t.Fatalf("archive after adding to the leftover: %s, reclaim %s (%s), want archived, skipped", res.Phase, res.Reclaim, res.Reason)
		default:
			if b, err := os.ReadFile(filepath.Join(trash, "notes.txt")); err != nil || string(b) != "work\n" {
				t.Fatalf("what was added: %q, %v", b, err)
			}
		}
	}
}

func chattr(t *testing.T, flag, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", flag, path).CombinedOutput(); err != nil {
		t.Fatalf("chattr %s %s: %v\n%s", flag, path, err, out)
	}
}

// `reclaim --apply` of an archived task keeps what its removal, stopped
// halfway, left on the task, and the next apply finishes it: the task is
// recorded absent.
func TestReclaimApplyFinishesAnInterruptedRemoval(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s.SessionDir, "exited")
	if res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive}); err != nil || res.Phase != records.PhaseArchived {
		t.Fatalf("archive: %+v, %v", res, err)
	}
	trash := filepath.Join(filepath.Dir(task.TaskDir), ".reclaim."+filepath.Base(task.TaskDir))
	chattr(t, "+i", filepath.Join(task.TaskDir, "README"))
	t.Cleanup(func() { exec.Command("chattr", "-i", filepath.Join(trash, "README")).Run() })
	apply := func(want string) {
		t.Helper()
		plan, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "prod"})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(plan, func(r ReclaimRow) bool { return r.TaskID == task.ID })
		if i < 0 || plan[i].Action != ReclaimRemove {
			t.Fatalf("the plan for the archived task: %+v", plan)
		}
		rows, err := f.exec.ApplyReclaim(ctx, plan[i:i+1], nil)
		if err != nil || len(rows) != 1 || rows[0].Action != want {
			t.Fatalf("reclaim --apply: %+v, %v; want %s", rows, err, want)
		}
	}
	apply(ReclaimFailed)
	got, _, err := f.exec.GetTask(ctx, task.ID)
	if err != nil || got.Teardown == nil || len(got.Teardown.ReclaimRemains) == 0 {
		t.Fatalf("the task after a removal stopped halfway: %+v, %v; want what it left kept", got, err)
	}
	chattr(t, "-i", filepath.Join(trash, "README"))
	apply(ReclaimRemoved)
	if got, _, err = f.exec.GetTask(ctx, task.ID); err != nil || got.Phase != records.PhaseAbsent {
		t.Fatalf("the task after the reclaim: %+v, %v", got, err)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("the leftover after the reclaim: %v", err)
	}
}
