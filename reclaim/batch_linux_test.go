package reclaim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// copies makes n copies of a prepared checkout under root/tasks/ (all
// marked as task-1, as the copy's marker says), named t-0 ... t-<n-1>.
func copies(t *testing.T, root string, n int) []Target {
	t.Helper()
	bare, _ := origin(t)
	seed := prepared(t, root, "seed", "task-1", bare)
	var targets []Target
	for i := range n {
		dir := fmt.Sprintf("t-%d", i)
		if out, err := exec.Command("cp", "-a", seed, filepath.Join(root, "tasks", dir)).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		targets = append(targets, target(root, dir, "task-1"))
	}
	return targets
}

// An apply of more directories than one batch removes every clean one
// and keeps each one a process works in, in the first batch and in a
// later one, each result in its target's place.
func TestApplyManyBatchesKeepsEachInUse(t *testing.T) {
	root := newRoot(t)
	targets := copies(t, root, batchSize+2)
	busy := map[int]int{3: 0, batchSize + 1: 0}
	for i := range busy {
		busy[i], _ = sleeper(t, "sleep", targets[i].Path())
	}
	rep, err := Apply(context.Background(), Request{Targets: targets, ProbeTimeoutSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Results {
		if r.Path != targets[i].Path() {
			t.Fatalf("result %d is %s, want %s", i, r.Path, targets[i].Path())
		}
		_, err := os.Lstat(filepath.Join(targets[i].Path(), "README"))
		pid, inUse := busy[i]
		switch {
		case !inUse:
			wantResult(t, r, Remove, Removed, "")
			if !os.IsNotExist(err) {
				t.Fatalf("%s is still there: %v", r.Path, err)
			}
		case !strings.Contains(r.Detail, fmt.Sprintf("pid %d (sleep)", pid)):
			t.Fatalf("result %d = %+v, want it in use by pid %d", i, r, pid)
		default:
			wantResult(t, r, Fail, Failed, InUse)
			if err != nil {
				t.Fatalf("%s in use was touched: %v", r.Path, err)
			}
		}
	}
}

// The process table a batch's removals are rechecked against is read
// after every directory of the batch was renamed: a process that enters
// a directory by its trash name once it was renamed, while the batch
// still proves another one, keeps it. Read before that directory's
// rename, or once for the whole call, it would not see the process.
func TestApplyBatchRechecksAfterEveryRename(t *testing.T) {
	root := newRoot(t)
	targets := copies(t, root, 2)
	first, second := targets[0], targets[1]
	// The second directory's proof waits for its lock, held here until
	// the first was renamed and a process works in it.
	hold, err := taskdir.LockTaskDir(t.Context(), second.Path())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Report, 1)
	go func() {
		rep, err := Apply(context.Background(), Request{Targets: targets, Parallelism: 1, ProbeTimeoutSeconds: 30})
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	trash := filepath.Join(root, tasksDir, trashName(first.Dir))
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Lstat(trash); err == nil {
			break
		}
		if time.Now().After(deadline) {
			hold()
			t.Fatalf("%s was never renamed to %s", first.Path(), trash)
		}
		time.Sleep(5 * time.Millisecond)
	}
	pid, _ := sleeper(t, "sleep", trash)
	hold()
	rep := <-done
	if rep == nil {
		t.FailNow()
	}
	r := rep.Results[0]
	wantResult(t, r, Fail, Failed, InUse)
	if !strings.Contains(r.Detail, fmt.Sprintf("pid %d (sleep)", pid)) {
		t.Fatalf("detail %q does not name pid %d", r.Detail, pid)
	}
	if _, err := os.Lstat(filepath.Join(first.Path(), "README")); err != nil {
		t.Fatalf("%s did not get its name back: %v", first.Path(), err)
	}
	wantResult(t, rep.Results[1], Remove, Removed, "")
}

// A call whose time runs out once a batch's directories were renamed,
// before their removal, gives each its name back, whole: no removal
// starts after the call's time.
func TestApplyTimeOutAfterRenameGivesNameBack(t *testing.T) {
	root := newRoot(t)
	targets := copies(t, root, 2)
	// The second directory's lock is held past the call's time, so the
	// batch's removals begin only once it ran out.
	hold, err := taskdir.LockTaskDir(t.Context(), targets[1].Path())
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	before := snapshot(t, root)
	rep, err := Apply(context.Background(), Request{Targets: targets, Parallelism: 1, TimeoutSeconds: 3, ProbeTimeoutSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, rep.Results[0], Fail, Failed, TimedOut)
	if !strings.Contains(rep.Results[0].Detail, "before "+targets[0].Path()+" was removed") {
		t.Fatalf("detail %q", rep.Results[0].Detail)
	}
	wantResult(t, rep.Results[1], Fail, Failed, Busy)
	onlyRemoved(t, before, snapshot(t, root), "")
}
