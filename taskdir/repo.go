package taskdir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkout makes dir a checkout of url on taskBranch. It initialises in
// place (dir may already hold .kandev/, so clone cannot be used), fetches
// an existing checkout of the same origin, and creates taskBranch from
// origin/<base> only when it is missing: an existing branch is checked out
// as it is, and nothing is ever reset, so local commits and untracked
// work survive every later session. An existing checkout that a checkout
// could lose work from (safeToCheckout) is refused, never repaired.
func checkout(ctx context.Context, dir, url, taskBranch, base string) error {
	isRepo, err := isDir(filepath.Join(dir, ".git"))
	if err != nil {
		return err
	}
	if !isRepo {
		if _, err := plain(dir).run(ctx, "init", "--quiet"); err != nil {
			return err
		}
	}
	g, err := inCheckout(ctx, dir, url)
	if err != nil {
		return err
	}
	// An init that crashed before the remote was added is finished here.
	origin, hasOrigin, err := g.query(ctx, "config", "--get", "remote.origin.url")
	switch {
	case err != nil:
		return err
	case !hasOrigin:
		if _, err := g.run(ctx, "remote", "add", "origin", url); err != nil {
			return err
		}
	case origin != url:
		return errorf(CodeOriginMismatch, "%s is a checkout of %s, not %s", dir, MaskURLs(origin), MaskURLs(url))
	}
	// From the launch URL into origin's usual refs, with nothing of the
	// checkout's remote configuration (its refspecs, upload-pack, helper).
	fetch := []string{"fetch", "--quiet", "--no-recurse-submodules", "--no-auto-gc", "--no-write-commit-graph",
		url, "+refs/heads/*:refs/remotes/origin/*"}
	if _, err := g.run(ctx, fetch...); err != nil {
		return err
	}
	if isRepo {
		if err := safeToCheckout(ctx, g, taskBranch); err != nil {
			return err
		}
	}
	if _, exists, err := g.query(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+taskBranch); err != nil {
		return err
	} else if exists {
		current, _, err := g.query(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
		if err != nil || current == taskBranch {
			return err
		}
		// Without --force: git refuses rather than overwrite local changes.
		_, err = g.run(ctx, "checkout", "--quiet", taskBranch)
		return err
	}
	if base == "" {
		if base, err = defaultBranch(ctx, g, url); err != nil {
			return err
		}
	}
	start := "refs/remotes/origin/" + base
	if _, ok, err := g.query(ctx, "rev-parse", "--verify", "--quiet", start+"^{commit}"); err != nil {
		return err
	} else if !ok {
		return errorf(CodeGitFailed, "branch %q not found on origin %s", base, MaskURLs(url))
	}
	// --no-track: pushing the task branch must never update the base.
	_, err = g.run(ctx, "checkout", "--quiet", "--no-track", "-b", taskBranch, start)
	return err
}

// InProgress names the state git keeps in a gitdir while an operation is
// unfinished; a checkout in the middle of one would abandon it, and
// deleting it would lose it.
var InProgress = []struct{ File, What string }{
	{"rebase-merge", "a rebase"},
	{"rebase-apply", "a rebase (or git am)"},
	{"MERGE_HEAD", "a merge"},
	{"CHERRY_PICK_HEAD", "a cherry-pick"},
	{"REVERT_HEAD", "a revert"},
	{"BISECT_LOG", "a bisect"},
}

// safeToCheckout refuses an existing checkout that a checkout of the task
// branch could lose work from: one in the middle of a rebase, merge,
// cherry-pick, revert or bisect, or one whose HEAD is detached anywhere
// but at the tip of the task branch (commits made there would be left
// dangling). It never resets or discards anything: the user decides.
func safeToCheckout(ctx context.Context, g runner, taskBranch string) error {
	dir := g.dir
	for _, s := range InProgress {
		path := filepath.Join(dir, ".git", s.File)
		if _, err := os.Lstat(path); err == nil {
			return errorf(CodeUnsafeCheckout, "%s: %s is in progress (%s); finish or abort it yourself, then resume", dir, s.What, path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return errorf(CodeIO, "inspect %s: %v", path, err)
		}
	}
	if _, onBranch, err := g.query(ctx, "symbolic-ref", "--quiet", "HEAD"); err != nil || onBranch {
		return err
	}
	head, ok, err := g.query(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil || !ok {
		return err
	}
	tip, _, err := g.query(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+taskBranch+"^{commit}")
	if err != nil || tip == head {
		return err
	}
	return errorf(CodeUnsafeCheckout, "%s: HEAD is detached at %s, which is not the tip of task branch %q, and checking the branch out would leave any commits made there behind; create a branch for it or check out the task branch yourself, then resume",
		dir, head, taskBranch)
}

// defaultBranch asks the launch URL which branch its HEAD names.
func defaultBranch(ctx context.Context, g runner, url string) (string, error) {
	out, err := g.run(ctx, "ls-remote", "--symref", url, "HEAD")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if ref, ok := strings.CutPrefix(line, "ref: refs/heads/"); ok {
			if branch, ok := strings.CutSuffix(ref, "\tHEAD"); ok {
				return branch, nil
			}
		}
	}
	return "", errorf(CodeGitFailed, "origin %s names no default branch", MaskURLs(url))
}

// verify checks what the agent will rely on: dir is the top level of its
// own checkout (not a directory inside some other repository), origin is
// the expected URL, and HEAD is a commit on the task branch.
func verify(ctx context.Context, dir, url, taskBranch string) (head, branch string, err error) {
	fail := func(format string, args ...any) (string, string, error) {
		return "", "", errorf(CodeVerifyFailed, "%s: "+format, append([]any{dir}, args...)...)
	}
	g, err := inCheckout(ctx, dir, url)
	if err != nil {
		return "", "", err
	}
	// Unpinned, so that a core.worktree or an enclosing repository shows;
	// rev-parse runs nothing of the checkout's.
	top, err := plain(dir).run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", err
	}
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fail("%v", err)
	}
	if top != want {
		return fail("top level of the checkout is %s", top)
	}
	if origin, _, err := g.query(ctx, "config", "--get", "remote.origin.url"); err != nil {
		return "", "", err
	} else if origin != url {
		return fail("origin is %q, want %q", MaskURLs(origin), MaskURLs(url))
	}
	head, ok, err := g.query(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return "", "", err
	}
	if !ok {
		return fail("HEAD is not a commit")
	}
	branch, _, err = g.query(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return "", "", err
	}
	if branch != taskBranch {
		return fail("checked out %q, want task branch %q", branch, taskBranch)
	}
	return head, branch, nil
}

// addExcludes appends the missing patterns to .git/info/exclude, so our
// metadata and child checkouts never make the tree look dirty.
func addExcludes(dir string, patterns []string) error {
	info := filepath.Join(dir, ".git", "info")
	if _, err := ensureDir(info); err != nil {
		return err
	}
	path := filepath.Join(info, "exclude")
	b, _, err := readIfExists(path)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, p := range patterns {
		if !have[p] {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, strings.Join(add, "\n")+"\n"...)
	return writeFileAtomic(path, b)
}
