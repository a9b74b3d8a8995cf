package executor

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
)

// Regression: `task launch --branch dev` wins over the
// branch the profile's repository names, and the task records the branch
// and the commit it started from.
func TestLaunchBranchFlagWinsOverProfile(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	work := t.TempDir()
	git("clone", "--quiet", f.bare, work)
	git("-C", work, "checkout", "--quiet", "-b", "dev")
	git("-C", work, "commit", "--quiet", "--allow-empty", "-m", "on dev")
	git("-C", work, "push", "--quiet", "origin", "dev")
	dev, main := git("-C", work, "rev-parse", "dev"), git("-C", work, "rev-parse", "origin/main")

	for _, tc := range []struct{ branch, wantBranch, wantHead string }{{"dev", "dev", dev}, {"", "main", main}} {
		task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Branch: tc.branch, Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		if head := git("-C", task.TaskDir, "rev-parse", "HEAD"); head != tc.wantHead {
			t.Errorf("--branch %q: the task branch starts at %s, want %s's %s", tc.branch, head, tc.wantBranch, tc.wantHead)
		}
		got, _, err := records.Get[records.Task](ctx, f.exec.cfg.Store, records.KindTask, task.ID)
		if err != nil || got.BaseBranch != tc.wantBranch || got.BaseCommit != tc.wantHead {
			t.Errorf("--branch %q: recorded base %q at %q, %v; want %q at %s", tc.branch, got.BaseBranch, got.BaseCommit, err, tc.wantBranch, tc.wantHead)
		}
	}
}

// Regression: a profile with a prepare script and no
// repository launches: the task directory is made and claimed, the
// script fills it, and the agent runs in it.
func TestLaunchWithOnlyAPrepareScript(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	profile := fmt.Sprintf("name: scripted\nhost: prod\nworkdir_root: %s\nshell: sh\nprepare_script: |\n  git clone -q %s app && echo ok > made\n", f.root, f.bare)
	if _, err := f.exec.ApplyProfile(ctx, "scripted.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "scripted", Command: []string{"sh", "-c", "test -f made && test -d app/.git"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s.SessionDir, controller.StateExited)
	st, err := controller.ReadStatusFile(s.SessionDir)
	if err != nil || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("the agent in the scripted directory: %+v, %v", st, err)
	}
	got, _, err := records.Get[records.Task](ctx, f.exec.cfg.Store, records.KindTask, task.ID)
	if err != nil || got.Phase != records.PhaseReady || got.Repo != "" || got.BaseCommit != "" {
		t.Fatalf("task %+v, %v", got, err)
	}
}
