package reclaim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// One call proves many directories, answers in their order, and asks
// each remote URL for its tips once: ten clean checkouts of one origin
// cost ten git status (their indexes read directly) and one fetch.
func TestProveManyAsksEachRemoteOnce(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	var targets []Target
	for i := range 10 {
		dir := fmt.Sprintf("t-%d", i)
		prepared(t, root, dir, fmt.Sprintf("task-%d", i), bare)
		targets = append(targets, target(root, dir, fmt.Sprintf("task-%d", i)))
	}
	targets = append(targets, target(root, "t-missing", "task-x"))
	rep, err := Prove(context.Background(), Request{Targets: targets, Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Results {
		if r.Path != targets[i].Path() {
			t.Fatalf("result %d is %s, want %s", i, r.Path, targets[i].Path())
		}
		if i < 10 && (r.Action != Remove || r.TaskID != targets[i].TaskID) {
			t.Fatalf("result %d = %+v", i, r)
		}
	}
	if last := rep.Results[10]; last.Action != Remove || !strings.Contains(last.Detail, "already absent") {
		t.Fatalf("missing directory: %+v", last)
	}
	if rep.GitProcesses != 3 {
		t.Fatalf("%d git processes, want the 3 of one fetch (init, fetch, for-each-ref): each clean checkout's status is read from its files", rep.GitProcesses)
	}
}

// The apply of the same directories leaves tasks/ itself and the root's
// other contents alone.
func TestApplyManyLeavesTasksAndRoot(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	writeFile(t, filepath.Join(root, "bin", "kandev-exec"), "helper\n")
	writeFile(t, filepath.Join(root, "bin", "kandev-exec.sha256"), "sum\n")
	var targets []Target
	for i := range 5 {
		dir := fmt.Sprintf("t-%d", i)
		prepared(t, root, dir, fmt.Sprintf("task-%d", i), bare)
		targets = append(targets, target(root, dir, fmt.Sprintf("task-%d", i)))
	}
	prepared(t, root, "t-keep", "task-keep", bare)
	before := snapshot(t, root)
	for _, r := range apply(t, targets...) {
		wantResult(t, r, Remove, Removed, "")
	}
	after := snapshot(t, root)
	for p := range before {
		rel, _ := filepath.Rel(filepath.Join(root, "tasks"), p)
		gone := strings.HasPrefix(rel, "t-") && !strings.HasPrefix(rel, "t-keep")
		if after[p] == gone {
			t.Errorf("%s: present %v after the apply", p, after[p])
		}
	}
}

// A git that never answers (here a remote transport that hangs) is
// killed at the probe timeout, and unknown keeps the directory.
func TestApplyProbeTimeout(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	gitT(t, dir, "remote", "set-url", "origin", "ssh://git@example.invalid/repo.git")
	t.Setenv("GIT_SSH_COMMAND", "sleep 60; :") // git appends its arguments
	before := snapshot(t, root)
	rep, err := Apply(context.Background(), Request{Targets: []Target{target(root, "t-1", "task-1")}, ProbeTimeoutSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	wantResult(t, r, Skip, Skipped, FetchFailed)
	if !strings.Contains(r.Detail, "timed out after 1s") {
		t.Fatalf("detail %q", r.Detail)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}

// When the call's own time runs out, what was not reached fails (to be
// retried), and no removal starts.
func TestApplyCallTimeout(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	prepared(t, root, "t-2", "task-2", bare)
	gitT(t, dir, "remote", "set-url", "origin", "ssh://git@example.invalid/repo.git")
	t.Setenv("GIT_SSH_COMMAND", "sleep 60; :") // git appends its arguments
	before := snapshot(t, root)
	rep, err := Apply(context.Background(), Request{
		Targets:     []Target{target(root, "t-1", "task-1"), target(root, "t-2", "task-2")},
		Parallelism: 1, TimeoutSeconds: 1, ProbeTimeoutSeconds: 60,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The fetch the call's end cut short proves nothing: no skip.
	wantResult(t, rep.Results[0], Fail, Failed, TimedOut)
	if !strings.Contains(rep.Results[0].Detail, "the call's time ran out before "+dir+" was proven") {
		t.Fatalf("detail %q", rep.Results[0].Detail)
	}
	wantResult(t, rep.Results[1], Fail, Failed, TimedOut)
	onlyRemoved(t, before, snapshot(t, root), "")
}

// A task directory whose lock is held (a preparation or script still
// running there) is not removed now: a failure, retried later.
func TestApplyBusy(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	release, err := taskdir.LockTaskDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	before := snapshot(t, root)
	r := apply(t, target(root, "t-1", "task-1"))[0]
	wantResult(t, r, Fail, Failed, Busy)
	if !strings.Contains(r.Detail, fmt.Sprint(os.Getpid())) {
		t.Fatalf("detail %q does not name the holder", r.Detail)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}

// When the remote moved on since the checkout's last fetch, the proof
// fetches it itself: the old tip is an ancestor of the new one. The
// fetch touches none of the checkout's refs, and leaves nothing behind.
func TestProveRemoteMovedSinceFetch(t *testing.T) {
	bare, work := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	writeFile(t, filepath.Join(work, "more"), "more\n")
	gitT(t, work, "add", "more")
	gitT(t, work, "commit", "--quiet", "-m", "moved on")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	refs := gitT(t, dir, "for-each-ref")
	before := snapshot(t, root)
	r := prove(t, launchedT1(root, bare))[0]
	wantResult(t, r, Remove, "", "")
	onlyRemoved(t, before, snapshot(t, root), "")
	if got := gitT(t, dir, "for-each-ref"); got != refs {
		t.Fatalf("the checkout's refs changed:\n%s\nwere:\n%s", got, refs)
	}
}

// The wire format between the CLI and the helper: the field names both
// sides read.
func TestReportJSON(t *testing.T) {
	rep := Report{Results: []Result{{Path: "/r/tasks/t-1", TaskID: "task-1", Action: Remove, Outcome: Removed,
		Identity: &Identity{Dev: 1, Ino: 2}, Bytes: 3, AgeSeconds: 4}}, GitProcesses: 2}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"results":[{"path":"/r/tasks/t-1","task_id":"task-1","action":"remove","outcome":"removed","identity":{"dev":1,"ino":2},"bytes":3,"age_seconds":4}],"git_processes":2}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var req Request
	if err := json.Unmarshal([]byte(`{"targets":[{"root":"/r","dir":"t-1","installation_id":"i","task_id":"t","identity":{"dev":1,"ino":2},"enabled":true}]}`), &req); err != nil {
		t.Fatal(err)
	}
	if got := req.Targets[0]; got.Root != "/r" || got.Dir != "t-1" || got.InstallationID != "i" || got.TaskID != "t" || *got.Identity != (Identity{1, 2}) || !got.Enabled {
		t.Fatalf("decoded %+v", got)
	}
}
