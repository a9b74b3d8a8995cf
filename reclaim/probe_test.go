package reclaim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keptFor prepares t-1, lets mutate put something at risk in it, and
// asserts that Apply keeps every path with reason, naming detail.
func keptFor(t *testing.T, reason Reason, detail string, mutate func(t *testing.T, dir, bare, work string)) {
	t.Helper()
	keptWith(t, plainT1, reason, detail, mutate)
}

// keptWith is keptFor for the target tg makes of the root and origin.
func keptWith(t *testing.T, tg func(root, bare string) Target, reason Reason, detail string, mutate func(t *testing.T, dir, bare, work string)) {
	t.Helper()
	bare, work := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	mutate(t, dir, bare, work)
	before := snapshot(t, root)
	r := apply(t, tg(root, bare))[0]
	wantResult(t, r, Skip, Skipped, reason)
	if !strings.Contains(r.Detail, detail) {
		t.Fatalf("detail %q does not mention %q", r.Detail, detail)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}

// plainT1 is t-1 as a target without a launch record (an orphan's).
func plainT1(root, _ string) Target { return target(root, "t-1", "task-1") }

func commit(t *testing.T, dir, file, msg string) string {
	t.Helper()
	writeFile(t, filepath.Join(dir, file), msg+"\n")
	gitT(t, dir, "add", file)
	gitT(t, dir, "commit", "--quiet", "-m", msg)
	return gitT(t, dir, "rev-parse", "HEAD")
}

func TestApplyDirty(t *testing.T) {
	keptFor(t, DirtyWorktree, "README", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, "README"), "changed\n")
	})
}

func TestApplyStaged(t *testing.T) {
	keptFor(t, DirtyWorktree, "new.txt", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, "new.txt"), "staged\n")
		gitT(t, dir, "add", "new.txt")
	})
}

func TestApplyUntracked(t *testing.T) {
	keptFor(t, UntrackedFiles, "notes/scratch.txt", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, "notes", "scratch.txt"), "mine\n")
	})
}

func TestApplyIgnored(t *testing.T) {
	keptFor(t, IgnoredFiles, ".env", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n.env\n")
		writeFile(t, filepath.Join(dir, ".env"), "TOKEN=x\n")
	})
}

// Only .kandev/ of the top checkout is ours to ignore: session logs there
// do not keep the directory.
func TestApplyIgnoresOwnMetadata(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	writeFile(t, filepath.Join(dir, ".kandev", "sessions", "s-1", "agent.log"), "log\n")
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
}

func TestApplyUnpushedCommit(t *testing.T) {
	keptFor(t, UnpushedCommits, `1 commit(s) of "HEAD", "refs/heads/kandev/task-1"`, func(t *testing.T, dir, _, _ string) {
		commit(t, dir, "work.txt", "agent work")
	})
}

// A commit reachable only from a detached HEAD: --branches alone would
// call this pushed.
func TestApplyDetachedHeadAhead(t *testing.T) {
	keptFor(t, UnpushedCommits, `"HEAD"`, func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "checkout", "--quiet", "--detach")
		commit(t, dir, "work.txt", "detached work")
	})
}

// A branch other than the checked-out one holds the only copy.
func TestApplyUnpushedOtherBranch(t *testing.T) {
	keptFor(t, UnpushedCommits, "refs/heads/side", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "checkout", "--quiet", "-b", "side")
		commit(t, dir, "side.txt", "side work")
		gitT(t, dir, "checkout", "--quiet", "kandev/task-1")
	})
}

func TestApplyUnpushedTag(t *testing.T) {
	keptFor(t, UnpushedCommits, "refs/tags/v1", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "-c", "user.name=t", "tag", "-a", "-m", "release notes", "v1")
	})
}

func TestApplyStash(t *testing.T) {
	keptFor(t, StashPresent, "stash", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, "README"), "stashed\n")
		gitT(t, dir, "stash", "--quiet")
	})
}

func TestApplyMergeInProgress(t *testing.T) {
	keptFor(t, UnfinishedOperation, "a merge", func(t *testing.T, dir, bare, work string) {
		commit(t, work, "README", "theirs")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
		commit(t, dir, "README", "ours")
		gitT(t, dir, "fetch", "--quiet", "origin")
		cmd := gitCmd(dir, "merge", "origin/main")
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Fatalf("fixture: the merge should conflict: %s", out)
		}
	})
}

func TestApplyRebaseInProgress(t *testing.T) {
	keptFor(t, UnfinishedOperation, "a rebase", func(t *testing.T, dir, _, work string) {
		commit(t, work, "README", "theirs")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
		commit(t, dir, "README", "ours")
		gitT(t, dir, "fetch", "--quiet", "origin")
		if out, err := gitCmd(dir, "rebase", "origin/main").CombinedOutput(); err == nil {
			t.Fatalf("fixture: the rebase should stop: %s", out)
		}
	})
}

func TestApplyLinkedWorktree(t *testing.T) {
	keptFor(t, LinkedWorktree, "wt", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "worktree", "add", "--quiet", "--detach", filepath.Join(filepath.Dir(filepath.Dir(dir)), "..", "wt"))
	})
}

// The remote-tracking ref says pushed, but the remote was force-pushed
// back since: only the remote's current refs, as fetched, count.
func TestApplyStaleRemoteTrackingRef(t *testing.T) {
	keptFor(t, UnpushedCommits, "the first: ", func(t *testing.T, dir, _, work string) {
		commit(t, dir, "work.txt", "agent work")
		gitT(t, dir, "push", "--quiet", "origin", "HEAD:main")
		gitT(t, dir, "fetch", "--quiet", "origin") // origin/main now names the work
		gitT(t, work, "push", "--quiet", "--force", "origin", "HEAD:main")
		if got, want := gitT(t, dir, "rev-parse", "refs/remotes/origin/main"), gitT(t, dir, "rev-parse", "HEAD"); got != want {
			t.Fatalf("fixture: origin/main %s, want the stale %s", got, want)
		}
	})
}

// Commits pushed to a branch of their own are safe, even though no
// remote-tracking ref was updated for them here.
func TestApplyPushedTaskBranch(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	commit(t, dir, "work.txt", "agent work")
	commit(t, dir, "more.txt", "more work")
	gitT(t, dir, "push", "--quiet", "origin", "kandev/task-1")
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
}

// A commit that is an ancestor of a remote tip (not a tip itself) is
// pushed: the rev-list path.
func TestApplyAncestorOfRemoteTip(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	commit(t, dir, "a.txt", "one")
	gitT(t, dir, "branch", "--quiet", "behind")
	commit(t, dir, "b.txt", "two")
	gitT(t, dir, "push", "--quiet", "origin", "kandev/task-1")
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
}

func TestApplyNoRemote(t *testing.T) {
	keptFor(t, UnpushedCommits, "no remote", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "remote", "remove", "origin")
	})
}

// A second checkout inside the task directory (a repository of the task)
// with local changes keeps the whole directory; the detail names it.
func TestApplySecondCheckoutDirty(t *testing.T) {
	keptFor(t, DirtyWorktree, "t-1/web", func(t *testing.T, dir, bare, _ string) {
		gitT(t, dir, "clone", "--quiet", bare, "web")
		writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n/web/\n")
		writeFile(t, filepath.Join(dir, "web", "README"), "changed in the child\n")
	})
}

// A clean child checkout, excluded or merely untracked by the top one,
// is covered by its own probes.
func TestApplyCleanNestedCheckouts(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	gitT(t, dir, "clone", "--quiet", bare, "web")
	gitT(t, dir, "clone", "--quiet", bare, "nested")
	writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n/web/\n")
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
}

// A repository nested deeper, with a commit it never pushed, inside an
// otherwise clean child that ignores it.
func TestApplyNestedRepositoryUnpushed(t *testing.T) {
	keptFor(t, UnpushedCommits, "t-1/web/vendor/lib", func(t *testing.T, dir, bare, _ string) {
		gitT(t, dir, "clone", "--quiet", bare, "web")
		writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n/web/\n")
		lib := filepath.Join(dir, "web", "vendor", "lib")
		gitT(t, dir, "clone", "--quiet", bare, lib)
		writeFile(t, filepath.Join(dir, "web", ".git", "info", "exclude"), "/vendor/lib/\n")
		commit(t, lib, "x.txt", "never pushed")
	})
}

// submoduleOrigin makes origin's main carry a submodule lib (its own
// bare repository) and returns lib's bare path.
func submoduleOrigin(t *testing.T, work string) string {
	t.Helper()
	libBare, _ := origin(t)
	gitT(t, work, "submodule", "--quiet", "add", libBare, "lib")
	gitT(t, work, "commit", "--quiet", "-m", "add lib")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	return libBare
}

func TestApplyCleanSubmodule(t *testing.T) {
	bare, work := origin(t)
	submoduleOrigin(t, work)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	gitT(t, dir, "submodule", "--quiet", "update", "--init")
	if _, err := os.Lstat(filepath.Join(dir, "lib", "README")); err != nil {
		t.Fatalf("fixture: submodule not checked out: %v", err)
	}
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
}

func TestApplySubmoduleUnpushed(t *testing.T) {
	keptFor(t, UnpushedCommits, "t-1/lib", func(t *testing.T, dir, _, work string) {
		submoduleOrigin(t, work)
		gitT(t, dir, "pull", "--quiet", "--ff-only", "origin", "main")
		gitT(t, dir, "submodule", "--quiet", "update", "--init")
		// On a branch of the submodule, so the superproject stays clean.
		lib := filepath.Join(dir, "lib")
		gitT(t, lib, "checkout", "--quiet", "-b", "side")
		commit(t, lib, "x.txt", "submodule work")
		gitT(t, lib, "checkout", "--quiet", "--detach", "HEAD~1")
		if out := gitT(t, dir, "status", "--porcelain"); out != "" {
			t.Fatalf("fixture: superproject not clean: %s", out)
		}
	})
}

// A submodule whose checkout is gone (deinit) still has its repository
// under .git/modules, possibly with commits nobody pushed.
func TestApplySubmoduleWithoutCheckout(t *testing.T) {
	keptFor(t, ProbeFailed, "modules/lib", func(t *testing.T, dir, _, work string) {
		submoduleOrigin(t, work)
		gitT(t, dir, "pull", "--quiet", "--ff-only", "origin", "main")
		gitT(t, dir, "submodule", "--quiet", "update", "--init")
		gitT(t, dir, "submodule", "--quiet", "deinit", "lib")
	})
}

// As root, an unreadable directory is still read, so an untracked file
// in it is seen (git reads it as root too).
func TestApplyUnreadableSubdirectory(t *testing.T) {
	requireRoot(t)
	keptFor(t, UntrackedFiles, "locked/secret.txt", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, "locked", "secret.txt"), "mine\n")
		if err := os.Chmod(filepath.Join(dir, "locked"), 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestApplyNotACheckout(t *testing.T) {
	keptFor(t, NotACheckout, "not a git checkout", func(t *testing.T, dir, _, _ string) {
		if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, "git-was-here")); err != nil {
			t.Fatal(err)
		}
	})
}

// A .git file pointing nowhere cannot be probed: unknown keeps.
func TestApplyBrokenGitdir(t *testing.T) {
	keptFor(t, ProbeFailed, "t-1/web", func(t *testing.T, dir, _, _ string) {
		writeFile(t, filepath.Join(dir, "web", ".git"), "gitdir: /nonexistent/modules/web\n")
		writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), ".kandev/\n/web/\n")
	})
}

// A remote that cannot be reached proves nothing.
func TestApplyUnreachableRemote(t *testing.T) {
	keptFor(t, FetchFailed, "does not appear to be a git repository", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	})
}
