package executor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// useReclaimingProfile re-applies "web" with reclaim_task_dir: true.
func (f *launchFixture) useReclaimingProfile(t *testing.T) {
	t.Helper()
	profile := "name: web\nhost: prod\nworkdir_root: " + f.root + "\nshell: sh\nrepositories:\n  - name: app\n    url: " + f.bare + "\n    branch: main\nreclaim_task_dir: true\n"
	if _, err := f.exec.ApplyProfile(context.Background(), "web.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
}

// An archive and a resume of the same task at once fence each other by
// the task's claim: whichever holds it goes first, the other is refused
// or waits for the job, and in no order is the directory removed while a
// resumed agent runs in it undrained.
func TestArchiveRacingResume(t *testing.T) {
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	for round := range 4 {
		task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var archErr, resErr error
		var resumed *records.Session
		other := f.open(t) // another kandev-exec on the same state dir
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, archErr = f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
		}()
		go func() {
			defer wg.Done()
			_, resumed, resErr = other.Resume(ctx, task.ID, []string{"sleep", "300"}, Reports{})
		}()
		wg.Wait()
		// Whatever is left pending runs now.
		if _, err := f.exec.Sweep(ctx, 0); err != nil {
			t.Fatal(err)
		}
		final, _, err := f.exec.GetTask(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		var pe *PendingError
		var busy *TaskBusyError
		switch {
		case resErr == nil && resumed != nil && resumed.State == records.SessionRunning:
			// The resume won. The archive is either called off (the task
			// stays ready, its directory there) or ran after it, draining
			// the resumed session with a receipt before any removal.
			s, _, err := records.Get[records.Session](ctx, f.exec.cfg.Store, records.KindSession, resumed.ID)
			if err != nil {
				t.Fatal(err)
			}
			if final.Phase == records.PhaseAbsent && (s.Receipt == nil || !s.State.Ended()) {
				t.Fatalf("round %d: directory removed while the resumed session %s was %s without a receipt", round, s.ID, s.State)
			}
			if final.Phase.Launchable() {
				if _, err := os.Stat(final.TaskDir); err != nil {
					t.Fatalf("round %d: a resumed task lost its directory: %v", round, err)
				}
				if _, err := f.exec.StopSession(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			}
			if archErr != nil && !errors.As(archErr, &pe) {
				t.Fatalf("round %d: archive beside a resume: %v", round, archErr)
			}
		case errors.As(resErr, &busy) || errors.As(resErr, new(*UsageError)):
			// The archive won: the resume was refused at once.
			if archErr != nil || final.Phase != records.PhaseAbsent {
				t.Fatalf("round %d: archive won but ended %s, %v", round, final.Phase, archErr)
			}
		default:
			t.Fatalf("round %d: resume %v / %v, archive %v", round, resumed, resErr, archErr)
		}
	}
}

// Two sweeps at once run each due job once: the task's claim fences
// them, and the directory is recorded gone exactly once.
func TestTwoSweepsAtOnce(t *testing.T) {
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	var ids []string
	for range 3 {
		task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.exec.ensureJob(ctx, task, records.TriggerArchive); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	var wg sync.WaitGroup
	results := make([][]SweepResult, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if results[i], err = f.open(t).Sweep(ctx, 0); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ran := map[string]int{}
	for _, rs := range results {
		for _, r := range rs {
			if r.Ran {
				ran[r.TaskID]++
			}
		}
	}
	entries, err := f.exec.cfg.Store.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if ran[id] != 1 {
			t.Errorf("task %s: attempted by %d sweeps, want 1", id, ran[id])
		}
		absent := 0
		for _, e := range entries {
			if e.Name == id && e.Type == "task.absent" {
				absent++
			}
		}
		if absent != 1 {
			t.Errorf("task %s: recorded gone %d times", id, absent)
		}
	}
}

// A reclamation that cannot finish (here the task directory's lock is
// held, so the host answers busy) records reclaim "failed", keeps the
// directory and leaves the job to retry.
func TestReclaimFailureRecordsFailed(t *testing.T) {
	f := newLaunchFixture(t)
	f.useReclaimingProfile(t)
	ctx := context.Background()
	task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	release, err := taskdir.LockTaskDir(ctx, task.TaskDir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
	var pe *PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("archive with the directory locked: %v, want a pending cleanup", err)
	}
	out, _ := json.Marshal(res)
	if res.Reclaim != records.ReclaimFailed || !strings.Contains(string(out), `"reclaim":"failed"`) {
		t.Fatalf("result %s, want reclaim failed", out)
	}
	final, _, err := f.exec.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Phase != records.PhaseCleanupPending || final.Teardown.Reclaim != records.ReclaimFailed {
		t.Fatalf("task %s, reclaim %q, want cleanup_pending, failed", final.Phase, final.Teardown.Reclaim)
	}
	if _, err := os.Stat(task.TaskDir); err != nil {
		t.Fatalf("the directory of a failed reclamation: %v", err)
	}
}
