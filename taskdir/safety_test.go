package taskdir

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func resumeReq(root, url string) PrepareRequest {
	req := prepareReq(root, url)
	req.Owner.OperationID, req.Owner.Created = "op-2", time.Now()
	return req
}

// Commits made on a detached HEAD are reachable from nothing but HEAD: a
// resume must refuse rather than check the task branch out over them.
func TestPrepareRefusesDetachedHeadWithCommits(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	root := t.TempDir()
	dir := mustPrepare(t, prepareReq(root, bare)).TaskDirAbs
	gitT(t, dir, "checkout", "--quiet", "--detach")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("detached work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-am", "detached work")
	detached := gitT(t, dir, "rev-parse", "HEAD")

	_, err := Prepare(context.Background(), resumeReq(root, bare))
	wantCode(t, err, CodeUnsafeCheckout)
	for _, s := range []string{dir, detached, "create a branch for it or check out the task branch yourself, then resume"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != detached {
		t.Fatalf("HEAD moved to %s, want %s", got, detached)
	}
	if out := gitT(t, dir, "status", "--porcelain"); out != "" {
		t.Fatalf("tree changed: %q", out)
	}
}

// A detached HEAD with no task branch to compare against is refused too:
// creating the branch from origin would leave it behind just the same.
func TestPrepareRefusesDetachedHeadWithoutTaskBranch(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	root := t.TempDir()
	dir := mustPrepare(t, prepareReq(root, bare)).TaskDirAbs
	gitT(t, dir, "checkout", "--quiet", "--detach")
	gitT(t, dir, "branch", "--quiet", "-D", "kandev/task-1")

	_, err := Prepare(context.Background(), resumeReq(root, bare))
	wantCode(t, err, CodeUnsafeCheckout)
}

// A detached HEAD exactly at the task branch's tip loses nothing: the
// resume checks the branch out.
func TestPrepareDetachedAtTaskBranchTip(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	root := t.TempDir()
	first := mustPrepare(t, prepareReq(root, bare))
	gitT(t, first.TaskDirAbs, "checkout", "--quiet", "--detach")

	res := mustPrepare(t, resumeReq(root, bare))
	if res.Branch != "kandev/task-1" || res.Head != first.Head {
		t.Fatalf("resume = %+v, want branch kandev/task-1 at %s", res, first.Head)
	}
	if got := gitT(t, first.TaskDirAbs, "symbolic-ref", "--short", "HEAD"); got != "kandev/task-1" {
		t.Fatalf("HEAD = %s", got)
	}
}

func TestPrepareRefusesRebaseInProgress(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	root := t.TempDir()
	dir := mustPrepare(t, prepareReq(root, bare)).TaskDirAbs
	commit := func(content, msg string) {
		if err := os.WriteFile(filepath.Join(dir, "README"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-am", msg)
	}
	gitT(t, dir, "branch", "--quiet", "other")
	commit("task side\n", "task side")
	gitT(t, dir, "checkout", "--quiet", "other")
	commit("other side\n", "other side")
	gitT(t, dir, "checkout", "--quiet", "kandev/task-1")
	// A conflicting rebase stops halfway, HEAD detached.
	cmd := []string{"-c", "user.name=t", "-c", "user.email=t@example.com", "rebase", "other"}
	if err := runQuiet(dir, "git", cmd...); err == nil {
		t.Fatal("rebase did not stop on a conflict")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-merge")); err != nil {
		t.Fatalf("no rebase in progress: %v", err)
	}
	head := gitT(t, dir, "rev-parse", "HEAD")

	_, err := Prepare(context.Background(), resumeReq(root, bare))
	wantCode(t, err, CodeUnsafeCheckout)
	if !strings.Contains(err.Error(), "a rebase is in progress") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("error = %v", err)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved to %s, want %s", got, head)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-merge")); err != nil {
		t.Fatalf("rebase state gone: %v", err)
	}
}

func TestPrepareRefusesMergeInProgress(t *testing.T) {
	bare, _ := bareRepo(t, "README")
	root := t.TempDir()
	dir := mustPrepare(t, prepareReq(root, bare)).TaskDirAbs
	if err := os.WriteFile(filepath.Join(dir, ".git", "MERGE_HEAD"), []byte(gitT(t, dir, "rev-parse", "HEAD")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Prepare(context.Background(), resumeReq(root, bare))
	wantCode(t, err, CodeUnsafeCheckout)
	if !strings.Contains(err.Error(), "a merge is in progress") {
		t.Fatalf("error = %v", err)
	}
}

func runQuiet(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	return cmd.Run()
}
