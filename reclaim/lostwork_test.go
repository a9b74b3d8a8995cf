package reclaim

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Work a checkout can hold where git status does not look, or behind a
// remote that proves nothing: each is kept, with its reason. The
// configuration that would run code is in coderun_test.go.

// launched is target with the task's launch record: the top checkout was
// cloned from url.
func launched(root, dir, task, url string) Target {
	tg := target(root, dir, task)
	tg.Upstreams = []Upstream{{Path: ".", URL: url}}
	return tg
}

func launchedT1(root, bare string) Target { return launched(root, "t-1", "task-1", bare) }

// A submodule that was never initialised is an empty directory git
// never enters: a file written there is invisible to git status.
func TestApplyUninitialisedSubmoduleHoldsFiles(t *testing.T) {
	keptFor(t, HiddenChanges, "lib/notes.txt (in submodule path lib, which has no repository)", func(t *testing.T, dir, _, work string) {
		submoduleOrigin(t, work)
		gitT(t, dir, "pull", "--quiet", "--ff-only", "origin", "main")
		if fi, err := os.Lstat(filepath.Join(dir, "lib")); err != nil || !fi.IsDir() {
			t.Fatalf("fixture: lib is not the empty submodule directory: %v", err)
		}
		if r := prove(t, target(filepath.Dir(filepath.Dir(dir)), "t-1", "task-1"))[0]; r.Action != Remove {
			t.Fatalf("fixture: the clean checkout with an empty submodule path is not removable: %+v", r)
		}
		writeFile(t, filepath.Join(dir, "lib", "notes.txt"), "only here\n")
		if out := gitT(t, dir, "status", "--porcelain", "--untracked-files=all"); out != "" {
			t.Fatalf("fixture: git status sees %q", out)
		}
	})
}

// An edit git is told not to look at: skip-worktree and assume-unchanged.
func TestApplyIndexFlagsHideEdits(t *testing.T) {
	for _, flag := range []string{"skip-worktree", "assume-unchanged"} {
		t.Run(flag, func(t *testing.T) {
			keptFor(t, HiddenChanges, "README (marked "+flag+", and differs from the index)", func(t *testing.T, dir, _, _ string) {
				gitT(t, dir, "update-index", "--"+flag, "README")
				writeFile(t, filepath.Join(dir, "README"), "edited\n")
				if out := gitT(t, dir, "status", "--porcelain"); out != "" {
					t.Fatalf("fixture: git status sees %q", out)
				}
			})
		})
	}
}

// The index's fsmonitor extension marks entries valid: with a hook
// that reports nothing, an edit is never looked at. The probes use no
// fsmonitor, so git compares every entry.
func TestApplyFsmonitorValidBitsHideEdit(t *testing.T) {
	keptFor(t, DirtyWorktree, "README", func(t *testing.T, dir, _, _ string) {
		hook := filepath.Join(dir, ".git", "quiet-fsmonitor")
		writeFile(t, hook, "#!/bin/sh\nexit 0\n")
		if err := os.Chmod(hook, 0o755); err != nil {
			t.Fatal(err)
		}
		gitT(t, dir, "config", "core.fsmonitor", hook)
		gitT(t, dir, "config", "core.fsmonitorHookVersion", "1")
		gitT(t, dir, "update-index", "--fsmonitor")
		gitT(t, dir, "status", "--porcelain")
		writeFile(t, filepath.Join(dir, "README"), "edited, and a different size\n")
		if out := gitT(t, dir, "status", "--porcelain"); out != "" {
			t.Fatalf("fixture: git status sees %q", out)
		}
	})
}

// A sparse checkout marks every path outside its patterns
// skip-worktree; told to expect files there, git status ignores one
// written back with other content.
func TestApplySparseCheckoutHidesFile(t *testing.T) {
	keptFor(t, HiddenChanges, "README (marked skip-worktree, and differs from the index)", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "sparse-checkout", "set", "--no-cone", "/nothing-matches")
		gitT(t, dir, "config", "sparse.expectFilesOutsideOfPatterns", "true")
		writeFile(t, filepath.Join(dir, "README"), "written outside the patterns\n")
		if out := gitT(t, dir, "status", "--porcelain"); out != "" {
			t.Fatalf("fixture: git status sees %q", out)
		}
	})
}

// A marked file whose content is still the index's loses nothing.
func TestApplyIndexFlagsUnchangedRemoved(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	gitT(t, dir, "update-index", "--skip-worktree", "README")
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
}

// core.worktree (in config, or in config.worktree) pointing at another
// clean clone must not make the real worktree's files invisible.
func TestApplyCoreWorktreeElsewhere(t *testing.T) {
	for name, point := range map[string]func(t *testing.T, dir, other string){
		"config": func(t *testing.T, dir, other string) { gitT(t, dir, "config", "core.worktree", other) },
		"config.worktree": func(t *testing.T, dir, other string) {
			gitT(t, dir, "config", "extensions.worktreeConfig", "true")
			gitT(t, dir, "config", "--worktree", "core.worktree", other)
		},
		"bare": func(t *testing.T, dir, other string) { gitT(t, dir, "config", "core.bare", "true") },
	} {
		t.Run(name, func(t *testing.T) {
			keptFor(t, UntrackedFiles, "scratch.txt", func(t *testing.T, dir, bare, _ string) {
				other := filepath.Join(physical(t, t.TempDir()), "other")
				gitT(t, filepath.Dir(other), "clone", "--quiet", bare, other)
				writeFile(t, filepath.Join(dir, "scratch.txt"), "mine\n")
				point(t, dir, other)
			})
		})
	}
}

// core.ignorecase on a case-sensitive file system: readme next to a
// tracked README is a file of its own.
func TestApplyIgnoreCaseHidesFile(t *testing.T) {
	keptFor(t, UntrackedFiles, "readme", func(t *testing.T, dir, _, _ string) {
		gitT(t, dir, "config", "core.ignorecase", "true")
		writeFile(t, filepath.Join(dir, "readme"), "a different file\n")
		if out := gitT(t, dir, "status", "--porcelain"); out != "" {
			t.Fatalf("fixture: git status sees %q", out)
		}
	})
}

// Grafts that make the remote's tip a child of the unpushed commit.
func TestApplyGraftsMakeUnpushedLookPushed(t *testing.T) {
	keptFor(t, UnpushedCommits, `1 commit(s) of "HEAD"`, func(t *testing.T, dir, bare, _ string) {
		tip := gitT(t, dir, "rev-parse", "refs/remotes/origin/main")
		work := commit(t, dir, "work.txt", "agent work")
		writeFile(t, filepath.Join(dir, ".git", "info", "grafts"), tip+" "+work+"\n")
		if out := gitT(t, dir, "-c", "advice.graftFileDeprecated=false", "rev-list", "--count", work, "^"+tip); out != "0" {
			t.Fatalf("fixture: the grafts do not hide the commit (%s)", out)
		}
	})
}

// Replace refs that do the same: ignored, and a replacement is itself a
// commit the remote lacks.
func TestApplyReplaceRefMakesUnpushedLookPushed(t *testing.T) {
	keptFor(t, UnpushedCommits, "commit(s) of", func(t *testing.T, dir, _, _ string) {
		tip := gitT(t, dir, "rev-parse", "refs/remotes/origin/main")
		work := commit(t, dir, "work.txt", "agent work")
		gitT(t, dir, "replace", "--graft", tip, work)
		if out := gitT(t, dir, "rev-list", "--count", work, "^"+tip); out != "0" {
			t.Fatalf("fixture: the replacement does not hide the commit (%s)", out)
		}
	})
}

// A shallow boundary cuts history: a commit the remote has, but only
// beyond the boundary, cannot be proven pushed, and is kept.
func TestApplyShallowBoundaryCannotProveAncestry(t *testing.T) {
	keptFor(t, UnpushedCommits, `"HEAD"`, func(t *testing.T, dir, _, work string) {
		tip := commit(t, work, "more", "moved on")
		gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
		gitT(t, dir, "fetch", "--quiet", "origin")
		writeFile(t, filepath.Join(dir, ".git", "shallow"), tip+"\n")
	})
}

// A remote the agent added that points back into the directory proves
// nothing: `git remote add self .`, with or without the launch record.
func TestApplySelfRemoteProvesNothing(t *testing.T) {
	mutate := func(t *testing.T, dir, _, _ string) {
		commit(t, dir, "work.txt", "agent work")
		gitT(t, dir, "remote", "add", "self", ".")
		gitT(t, dir, "push", "--quiet", "self", "HEAD:refs/heads/saved")
	}
	t.Run("launched", func(t *testing.T) {
		keptWith(t, launchedT1, UnpushedCommits, "commit(s) of", mutate)
	})
	t.Run("unrecorded", func(t *testing.T) { keptFor(t, UnpushedCommits, "commit(s) of", mutate) })
}

// A bare mirror under .kandev/ (which is ours, and goes without a
// probe) that the commit was pushed to, origin removed.
func TestApplyMirrorInsideProvesNothing(t *testing.T) {
	keptFor(t, UnpushedCommits, "mirror (inside the task directories", func(t *testing.T, dir, _, _ string) {
		commit(t, dir, "work.txt", "agent work")
		gitT(t, dir, "init", "--quiet", "--bare", ".kandev/mirror.git")
		gitT(t, dir, "remote", "add", "mirror", ".kandev/mirror.git")
		gitT(t, dir, "push", "--quiet", "mirror", "HEAD:refs/heads/main")
		gitT(t, dir, "remote", "remove", "origin")
	})
}

// A remote outside the directory by name, inside it through a link.
func TestApplyRemoteLinkedIntoDirProvesNothing(t *testing.T) {
	keptFor(t, UnpushedCommits, "no remote to hold them", func(t *testing.T, dir, _, _ string) {
		commit(t, dir, "work.txt", "agent work")
		gitT(t, dir, "init", "--quiet", "--bare", ".kandev/mirror.git")
		link := filepath.Join(physical(t, t.TempDir()), "mirror.git")
		if err := os.Symlink(filepath.Join(dir, ".kandev", "mirror.git"), link); err != nil {
			t.Fatal(err)
		}
		gitT(t, dir, "remote", "set-url", "origin", link)
		gitT(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	})
}

// With the launch record, only the launch URL counts: a commit pushed to
// whatever origin now names is unpushed, and one pushed to the launch
// URL is pushed whatever origin names.
func TestApplyLaunchURLDecides(t *testing.T) {
	keptWith(t, launchedT1, UnpushedCommits, "commit(s) of", func(t *testing.T, dir, _, _ string) {
		elsewhere, _ := origin(t)
		commit(t, dir, "work.txt", "agent work")
		gitT(t, dir, "remote", "set-url", "origin", elsewhere)
		gitT(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/saved")
	})

	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	commit(t, dir, "work.txt", "agent work")
	gitT(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/kandev/task-1")
	gitT(t, dir, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	wantResult(t, apply(t, launchedT1(root, bare))[0], Remove, Removed, "")
}

// Commits kept only under a ref outside heads, tags and notes, only in a
// remote-tracking ref whose branch the remote deleted, or only in a
// reflog.
func TestApplyRefsOutsideBranches(t *testing.T) {
	for name, c := range map[string]struct {
		detail string
		mutate func(t *testing.T, dir, work string)
	}{
		"wip": {"refs/wip/kandev/task-1", func(t *testing.T, dir, _ string) {
			wip := gitT(t, dir, "commit-tree", "-p", "HEAD", "-m", "wip", "HEAD^{tree}")
			gitT(t, dir, "update-ref", "refs/wip/kandev/task-1", wip)
		}},
		"deleted-upstream-branch": {"refs/remotes/origin/feature", func(t *testing.T, dir, work string) {
			gitT(t, dir, "checkout", "--quiet", "-b", "feature")
			commit(t, dir, "feature.txt", "feature work")
			gitT(t, dir, "push", "--quiet", "origin", "feature")
			gitT(t, dir, "checkout", "--quiet", "kandev/task-1")
			gitT(t, dir, "branch", "--quiet", "-D", "feature")
			gitT(t, work, "push", "--quiet", "origin", "--delete", "feature")
		}},
		"reflog": {"logs/HEAD", func(t *testing.T, dir, _ string) {
			commit(t, dir, "work.txt", "agent work")
			gitT(t, dir, "reset", "--quiet", "--hard", "HEAD~1")
			if err := os.Remove(filepath.Join(dir, ".git", "ORIG_HEAD")); err != nil {
				t.Fatal(err)
			}
		}},
		"blob": {`ref(s) naming objects the remote does not have ("refs/keep/notes")`, func(t *testing.T, dir, _ string) {
			writeFile(t, filepath.Join(dir, ".kandev", "notes"), "kept only as a blob\n")
			blob := gitT(t, dir, "hash-object", "-w", ".kandev/notes")
			gitT(t, dir, "update-ref", "refs/keep/notes", blob)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			keptFor(t, UnpushedCommits, c.detail, func(t *testing.T, dir, _, work string) { c.mutate(t, dir, work) })
		})
	}
}

// Another repository borrowing this one's objects (git clone --shared)
// breaks when it goes: one in another task directory, one in the home
// directory.
func TestApplyBorrowedObjects(t *testing.T) {
	t.Run("task-dir", func(t *testing.T) {
		keptFor(t, BorrowedObjects, "tasks/t-2/.git", func(t *testing.T, dir, _, _ string) {
			gitT(t, filepath.Dir(dir), "clone", "--quiet", "--shared", dir, "t-2")
		})
	})
	t.Run("home", func(t *testing.T) {
		home := physical(t, t.TempDir())
		t.Setenv("HOME", home)
		keptFor(t, BorrowedObjects, filepath.Join(home, "src", "clone", ".git"), func(t *testing.T, dir, _, _ string) {
			gitT(t, home, "clone", "--quiet", "--shared", dir, filepath.Join(home, "src", "clone"))
		})
	})
}

// A checkout that borrows from elsewhere is removed, and what it
// borrowed from is left.
func TestApplyBorrowingCheckoutRemoved(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	writeFile(t, filepath.Join(dir, ".git", "objects", "info", "alternates"), filepath.Join(bare, "objects")+"\n")
	before := snapshot(t, root, bare)
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
	onlyRemoved(t, before, snapshot(t, root, bare), dir)
}

// A directory whose top is no checkout is listed as one, with what it
// holds, and kept unless the operator names it; named, everything else
// is still proven, a nested checkout's changes too.
func TestUncheckableKeptUnlessNamed(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	l, err := List(context.Background(), ListRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if e := l.Entries[0]; !e.NoCheckout || !slices.Equal(e.Holds, []string{"README"}) {
		t.Fatalf("listed %+v, want no checkout holding README", e)
	}
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, NotACheckout)
	nested := filepath.Join(dir, "lib")
	gitT(t, dir, "clone", "--quiet", bare, nested)
	writeFile(t, filepath.Join(nested, "README"), "changed\n")
	named := target(root, "t-1", "task-1")
	named.Uncheckable = true
	wantResult(t, apply(t, named)[0], Skip, Skipped, DirtyWorktree)
	gitT(t, nested, "checkout", "--quiet", "README")
	wantResult(t, apply(t, named)[0], Remove, Removed, "")
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", dir, err)
	}
}
