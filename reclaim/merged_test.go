package reclaim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Work that reached the upstream under other commits (a squash, a
// rebase, a cherry-pick), and work that only looks as if it had. Each
// test lands the task's two commits upstream the way a forge's merge
// button would, from the work clone, then proves the launched checkout.

// taskWork makes the task's two commits in dir: one edits README, one
// adds a file. It returns them, oldest first.
func taskWork(t *testing.T, dir string) (c1, c2 string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "README"), "hello\nfrom the task\n")
	gitT(t, dir, "commit", "--quiet", "-am", "task: README")
	c1 = gitT(t, dir, "rev-parse", "HEAD")
	return c1, commit(t, dir, "feature.txt", "task: feature")
}

// fetchTask brings the task branch into the work clone as FETCH_HEAD.
func fetchTask(t *testing.T, work, dir string) {
	t.Helper()
	gitT(t, work, "fetch", "--quiet", dir, "kandev/task-1")
}

func squashMerge(t *testing.T, work, dir string) string {
	t.Helper()
	fetchTask(t, work, dir)
	gitT(t, work, "merge", "--quiet", "--squash", "FETCH_HEAD")
	gitT(t, work, "commit", "--quiet", "-m", "task (#1)")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	return gitT(t, work, "rev-parse", "HEAD")
}

// merged prepares t-1, makes the task's work, lands it with land, and
// applies the launched target.
func merged(t *testing.T, land func(t *testing.T, dir, work string)) Result {
	t.Helper()
	bare, work := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	land(t, dir, work)
	return apply(t, launchedT1(root, bare))[0]
}

func wantRemovedBy(t *testing.T, r Result, method Method, commits ...string) {
	t.Helper()
	wantResult(t, r, Remove, Removed, "")
	by := map[string]Method{}
	for _, c := range r.Proof {
		for _, p := range c.Proofs {
			by[p.Commit] = p.Method
		}
	}
	for _, c := range commits {
		if by[c] != method {
			t.Errorf("commit %s proven by %q, want %q (proof %+v)", c, by[c], method, r.Proof)
		}
	}
}

func wantKeptAt(t *testing.T, r Result, reason Reason, first string) {
	t.Helper()
	wantResult(t, r, Skip, Skipped, reason)
	if !strings.Contains(r.Detail, "the first: "+first) {
		t.Fatalf("detail %q does not name the first unpushed commit %s", r.Detail, first)
	}
}

func TestApplySquashMerged(t *testing.T) {
	var c1, c2 string
	r := merged(t, func(t *testing.T, dir, work string) {
		c1, c2 = taskWork(t, dir)
		squashMerge(t, work, dir)
	})
	wantRemovedBy(t, r, BySquash, c1, c2)
}

// The upstream moved on after the squash: the squash commit is no tip.
func TestApplySquashMergedThenUpstreamMoved(t *testing.T) {
	var c1, c2 string
	r := merged(t, func(t *testing.T, dir, work string) {
		c1, c2 = taskWork(t, dir)
		squashMerge(t, work, dir)
		commit(t, work, "later.txt", "later work upstream")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	})
	wantRemovedBy(t, r, BySquash, c1, c2)
}

// The agent committed again after its branch was squash-merged: that
// commit is nowhere upstream, and it is the one named.
func TestApplySquashMergedThenLocalCommit(t *testing.T) {
	var c3 string
	r := merged(t, func(t *testing.T, dir, work string) {
		taskWork(t, dir)
		squashMerge(t, work, dir)
		c3 = commit(t, dir, "after.txt", "after the squash")
	})
	wantKeptAt(t, r, UnpushedCommits, c3)
}

// Rebased onto a main that had moved: new commits, the same changes.
func TestApplyRebasedOntoMovedMain(t *testing.T) {
	var c1, c2 string
	r := merged(t, func(t *testing.T, dir, work string) {
		c1, c2 = taskWork(t, dir)
		commit(t, work, "other.txt", "someone else's work")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
		fetchTask(t, work, dir)
		gitT(t, work, "checkout", "--quiet", "-b", "rebased", "FETCH_HEAD")
		gitT(t, work, "rebase", "--quiet", "main")
		gitT(t, work, "push", "--quiet", "origin", "rebased:main")
		if gitT(t, work, "rev-parse", "rebased") == c2 {
			t.Fatal("fixture: the rebase kept the commits")
		}
	})
	wantRemovedBy(t, r, ByPatchID, c1, c2)
}

// Only the first of two commits was cherry-picked: the second is kept,
// and named.
func TestApplyCherryPickedOneOfTwo(t *testing.T) {
	var c1, c2 string
	r := merged(t, func(t *testing.T, dir, work string) {
		c1, c2 = taskWork(t, dir)
		fetchTask(t, work, dir)
		commit(t, work, "other.txt", "someone else's work")
		gitT(t, work, "cherry-pick", c1)
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	})
	wantKeptAt(t, r, UnpushedCommits, c2)
}

// A merge commit upstream: the task's commits themselves are there.
func TestApplyMergeCommitMerged(t *testing.T) {
	var c2 string
	r := merged(t, func(t *testing.T, dir, work string) {
		_, c2 = taskWork(t, dir)
		commit(t, work, "other.txt", "someone else's work")
		fetchTask(t, work, dir)
		gitT(t, work, "merge", "--quiet", "--no-ff", "-m", "Merge task", "FETCH_HEAD")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	})
	wantResult(t, r, Remove, Removed, "")
	for _, p := range r.Proof[0].Proofs {
		if p.Ref == "HEAD" && (p.Commit != c2 || p.Method != ByAncestor || p.By != "refs/heads/main") {
			t.Fatalf("HEAD proven by %+v, want %s an ancestor of refs/heads/main", p, c2)
		}
	}
}

// The task branch was pushed, then deleted or force-pushed away on the
// remote: the checkout's remote-tracking ref still names it, and proves
// nothing.
func TestApplyUpstreamForcePushedAway(t *testing.T) {
	var c1 string
	r := merged(t, func(t *testing.T, dir, work string) {
		c1, _ = taskWork(t, dir)
		gitT(t, dir, "push", "--quiet", "origin", "kandev/task-1")
		gitT(t, dir, "fetch", "--quiet", "origin")
		gitT(t, work, "push", "--quiet", "origin", ":kandev/task-1")
	})
	wantKeptAt(t, r, UnpushedCommits, c1)
}

// The upstream is gone: nothing can be proven, whatever the checkout's
// own refs say.
func TestApplyFetchFailsRemoteGone(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	prepared(t, root, "t-1", "task-1", bare)
	if err := os.RemoveAll(bare); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	r := apply(t, launchedT1(root, bare))[0]
	wantResult(t, r, Skip, Skipped, FetchFailed)
	if !strings.Contains(r.Detail, "does not appear to be a git repository") {
		t.Fatalf("detail %q", r.Detail)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}

// The same change but for whitespace is another change.
func TestApplyWhitespaceVariantProvesNothing(t *testing.T) {
	var c1 string
	r := merged(t, func(t *testing.T, dir, work string) {
		writeFile(t, filepath.Join(dir, "README"), "hello\n    indented\n")
		gitT(t, dir, "commit", "--quiet", "-am", "task: indent")
		c1 = gitT(t, dir, "rev-parse", "HEAD")
		writeFile(t, filepath.Join(work, "README"), "hello\nindented\n")
		gitT(t, work, "commit", "--quiet", "-am", "task: indent")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	})
	wantKeptAt(t, r, UnpushedCommits, c1)
}

// A file the checkout's attributes call binary (so a plain diff says
// only "Binary files differ") changed to other content upstream: the
// changes are compared in full, so it is not the same change.
func TestApplyBinaryVariantProvesNothing(t *testing.T) {
	var c1 string
	r := merged(t, func(t *testing.T, dir, work string) {
		writeFile(t, filepath.Join(dir, ".git", "info", "attributes"), "* -diff\n")
		c1 = commit(t, dir, "data.bin", "the task's content")
		commit(t, work, "data.bin", "other content")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	})
	wantKeptAt(t, r, UnpushedCommits, c1)
}

// Hooks, an fsmonitor and a textconv (and external diff) driver of the
// checkout's config run during none of the squash proof's git runs.
func TestSquashProofRunsNoCheckoutCode(t *testing.T) {
	cmd, path := marker(t, "checkout-code-ran")
	var c1, c2 string
	r := merged(t, func(t *testing.T, dir, work string) {
		c1, c2 = taskWork(t, dir)
		squashMerge(t, work, dir)
		prog := filepath.Join(dir, ".git", "evil")
		writeFile(t, prog, "#!/bin/sh\n"+cmd+"\ncat \"$1\" 2>/dev/null\n")
		if err := os.Chmod(prog, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"post-index-change", "reference-transaction", "pre-auto-gc", "post-checkout", "fsmonitor-watchman"} {
			writeFile(t, filepath.Join(dir, ".git", "hooks", name), "#!/bin/sh\n"+cmd+"\n")
			if err := os.Chmod(filepath.Join(dir, ".git", "hooks", name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(dir, ".git", "info", "attributes"), "* diff=evil\n")
		gitT(t, dir, "config", "diff.evil.textconv", prog)
		gitT(t, dir, "config", "diff.external", prog)
		gitT(t, dir, "config", "core.fsmonitor", prog)
		gitT(t, dir, "config", "core.sshCommand", prog)
		gitT(t, dir, "config", "credential.helper", "!"+prog)
	})
	wantRemovedBy(t, r, BySquash, c1, c2)
	noMarker(t, path)
}

// The branch merged the upstream's main into itself before the squash
// (a forge's "update branch"): the merge base is the main it merged, so
// the squash's change is still the branch's.
func TestApplySquashMergedAfterUpdatingBranch(t *testing.T) {
	var c1, c2 string
	r := merged(t, func(t *testing.T, dir, work string) {
		c1, _ = taskWork(t, dir)
		commit(t, work, "other.txt", "someone else's work")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
		gitT(t, dir, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
		c2 = commit(t, dir, "after-update.txt", "task: after the update")
		squashMerge(t, work, dir)
	})
	wantRemovedBy(t, r, BySquash, c1, c2)
}
