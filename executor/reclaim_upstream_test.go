package executor

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/helpertest"
	"github.com/kdlbs/kandev-exec/records"
)

// gitIn runs git in dir as the agent would, with an identity.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=agent", "-c", "user.email=agent@example.com"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
}

// An archive over the real helper counts a commit as pushed only if the
// repository the task was launched with has it, as the local record
// says: a remote the agent added inside the directory (the primary's
// `self`), or one it pointed elsewhere (the second repository's origin,
// outside the directory, which a checkout the agent made itself could
// count), proves nothing. Both tasks stay archived, unpushed_commits.
func TestArchiveCountsOnlyTheLaunchRepositories(t *testing.T) {
	f := newLaunchFixture(t)
	lib, _ := helpertest.GitRepo(t)
	elsewhere, _ := helpertest.GitRepo(t)
	profile := fmt.Sprintf("name: web\nhost: prod\nworkdir_root: %s\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\n  - name: lib\n    url: %s\n    branch: main\nreclaim_task_dir: true\n", f.root, f.bare, lib)
	if _, err := f.exec.ApplyProfile(context.Background(), "web.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	for name, agent := range map[string]func(t *testing.T, dir string){
		"self remote": func(t *testing.T, dir string) {
			gitIn(t, dir, "commit", "--quiet", "--allow-empty", "-m", "agent work")
			gitIn(t, dir, "remote", "add", "self", ".")
			gitIn(t, dir, "push", "--quiet", "self", "HEAD:refs/heads/saved")
		},
		"origin moved": func(t *testing.T, dir string) {
			child := filepath.Join(dir, "lib")
			gitIn(t, child, "commit", "--quiet", "--allow-empty", "-m", "agent work")
			gitIn(t, child, "remote", "set-url", "origin", elsewhere)
			gitIn(t, child, "push", "--quiet", "origin", "HEAD:refs/heads/saved")
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			want := []records.TaskRepository{{Path: ".", URL: f.bare}, {Path: "lib", URL: lib}}
			if !reflect.DeepEqual(task.Repositories, want) {
				t.Fatalf("recorded repositories %+v, want %+v", task.Repositories, want)
			}
			agent(t, task.TaskDir)
			if _, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive}); err != nil {
				t.Fatal(err)
			}
			final, _, err := f.exec.GetTask(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if final.Phase != records.PhaseArchived || final.Teardown.Reclaim != records.ReclaimSkipped ||
				!strings.HasPrefix(final.Teardown.Reason, "unpushed_commits") {
				t.Fatalf("task %s, reclaim %q, reason %q; want archived, skipped, unpushed_commits", final.Phase, final.Teardown.Reclaim, final.Teardown.Reason)
			}
		})
	}
}
