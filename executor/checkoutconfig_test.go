package executor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// A resume over the real sshd runs nothing the agent wrote into the
// checkout's git configuration or hooks, and still prepares the task; a
// key no override can neutralise refuses it, naming the key.
func TestResumeRunsNothingOfTheCheckout(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	task, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	touch := "touch " + marker
	agent := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", task.TaskDir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	// Upstream moves on (the fetch updates refs) and the agent left another
	// branch checked out (the resume checks the task branch out again).
	agent("push", "--quiet", f.bare, "HEAD:refs/heads/moved")
	agent("checkout", "--quiet", "-b", "other")
	agent("config", "core.sshCommand", touch+"; false")
	agent("config", "core.fsmonitor", touch)
	agent("config", "credential.helper", "!"+touch)
	agent("config", "remote.origin.uploadpack", touch+"; git-upload-pack")
	for _, hook := range []string{"reference-transaction", "post-checkout"} {
		if err := os.WriteFile(filepath.Join(task.TaskDir, ".git", "hooks", hook), []byte("#!/bin/sh\n"+touch+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.exec.Resume(ctx, task.ID, []string{"true"}, Reports{}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Fatal("a resume ran code of the checkout's configuration")
	}

	agent("config", "include.path", filepath.Join(t.TempDir(), "more.cfg"))
	_, _, err = f.exec.Resume(ctx, task.ID, []string{"true"}, Reports{})
	var re *remote.Error
	if !errors.As(err, &re) || re.Code != taskdir.CodeUnsafeCheckout || !strings.Contains(re.Message, "config --unset-all 'include.path'") {
		t.Fatalf("resume with an include: %v", err)
	}
}
