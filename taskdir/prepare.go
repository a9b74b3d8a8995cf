package taskdir

import (
	"context"
	"path/filepath"
	"strings"
)

// PrepareRequest makes or reuses <root>/tasks/<task_dir>/ with its
// checkouts.
type PrepareRequest struct {
	Root    string `json:"root"`     // absolute or ~-prefixed
	TaskDir string `json:"task_dir"` // one segment (docs/architecture.md, "On the host")
	Owner   Owner  `json:"owner"`
	// Repositories: the first is the primary, checked out at the task
	// dir's root; the others go into child directories named by Name.
	// None: the directory is made and claimed, and the profile's prepare
	// script fills it.
	Repositories []Repository `json:"repositories"`
	TaskBranch   string       `json:"task_branch"`
	// BaseBranch is what a missing task branch starts from, unless the
	// repository names its own Branch; empty means origin's default.
	BaseBranch     string `json:"base_branch"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
	// Lookup is the agent's program, looked up before anything else
	// (the helper's prepare, LookFirst).
	Lookup *ProgramLookup `json:"lookup,omitempty"`
}

// Repository is one checkout of a task.
type Repository struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Branch string `json:"branch,omitempty"`
}

// PrepareResult describes the verified primary checkout (Head and Branch
// are empty without repositories).
type PrepareResult struct {
	TaskDirAbs string `json:"task_dir_abs"`
	Head       string `json:"head"`
	Branch     string `json:"branch"`
	Created    bool   `json:"created"` // the task dir did not exist before
	Owner      Owner  `json:"owner"`   // as recorded, which on a resume is the first claim
}

// Prepare claims the task directory, materialises every repository on
// the task branch without ever resetting or discarding local work, and
// verifies the result before anything is allowed to run in it.
func Prepare(ctx context.Context, req PrepareRequest) (*PrepareResult, error) {
	ctx, cancel := requestContext(ctx, req.TimeoutSeconds)
	defer cancel()
	if err := req.validate(ctx); err != nil {
		return nil, err
	}
	root, err := PrivateRoot(req.Root)
	if err != nil {
		return nil, err
	}
	tasks := filepath.Join(root, "tasks")
	if _, err := ensurePrivateDir(tasks); err != nil {
		return nil, err
	}
	dir := filepath.Join(tasks, req.TaskDir)
	created, err := ensurePrivateDir(dir)
	if err != nil {
		return nil, err
	}
	owner, err := claimOwner(dir, req.Owner)
	if err != nil {
		return nil, err
	}
	// Taken once the directory is provably ours, and held to the end.
	release, err := LockTaskDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer release()
	res := &PrepareResult{TaskDirAbs: dir, Created: created, Owner: owner}
	if len(req.Repositories) == 0 {
		return res, nil // the prepare script fills it
	}
	if err := prepareRepos(ctx, dir, req); err != nil {
		return nil, err
	}
	if res.Head, res.Branch, err = verify(ctx, dir, req.Repositories[0].URL, req.TaskBranch); err != nil {
		return nil, err
	}
	return res, nil
}

func prepareRepos(ctx context.Context, dir string, req PrepareRequest) error {
	primary := req.Repositories[0]
	if err := checkout(ctx, dir, primary.URL, req.TaskBranch, firstOf(primary.Branch, req.BaseBranch)); err != nil {
		return err
	}
	// Excluded up front, so a child that fails halfway still leaves the
	// primary looking clean.
	excludes := []string{metaDir + "/"}
	for _, r := range req.Repositories[1:] {
		excludes = append(excludes, "/"+r.Name+"/")
	}
	if err := addExcludes(dir, excludes); err != nil {
		return err
	}
	g, err := inCheckout(ctx, dir, primary.URL)
	if err != nil {
		return err
	}
	for _, r := range req.Repositories[1:] {
		// A child checkout where the primary tracks a path would mix two
		// repositories' files.
		if _, tracked, err := g.query(ctx, "cat-file", "-e", "HEAD:"+r.Name); err != nil {
			return err
		} else if tracked {
			return errorf(CodeBadRequest, "repository %q: %s is tracked by the primary repository", r.Name, filepath.Join(dir, r.Name))
		}
		child := filepath.Join(dir, r.Name)
		if _, err := ensureDir(child); err != nil {
			return err
		}
		if err := checkout(ctx, child, r.URL, req.TaskBranch, firstOf(r.Branch, req.BaseBranch)); err != nil {
			return err
		}
		if _, _, err := verify(ctx, child, r.URL, req.TaskBranch); err != nil {
			return err
		}
	}
	return nil
}

func (req PrepareRequest) validate(ctx context.Context) error {
	switch {
	case req.Root == "":
		return errorf(CodeBadRequest, "root is empty")
	case !ValidTaskDir(req.TaskDir):
		return errorf(CodeBadRequest, "task_dir %q is not one segment of [a-z0-9][a-z0-9._-]* of at most %d bytes", req.TaskDir, maxSegment)
	case req.Owner.TaskID == "" || req.Owner.InstallationID == "" || req.Owner.OperationID == "":
		return errorf(CodeBadRequest, "owner needs installation_id, task_id and operation_id")
	}
	names := map[string]bool{}
	for i, r := range req.Repositories {
		if r.URL == "" || strings.HasPrefix(r.URL, "-") {
			return errorf(CodeBadRequest, "repository %d: bad url %q", i, MaskURLs(r.URL))
		}
		if strings.HasPrefix(r.Branch, "-") {
			return errorf(CodeBadRequest, "repository %d: bad branch %q", i, r.Branch)
		}
		if i == 0 {
			continue
		}
		if len(r.Name) > maxSegment || !repoNameRE.MatchString(r.Name) || names[r.Name] {
			return errorf(CodeBadRequest, "repository %d: name %q is not a unique segment of [A-Za-z0-9][A-Za-z0-9._-]*", i, r.Name)
		}
		names[r.Name] = true
	}
	if strings.HasPrefix(req.BaseBranch, "-") {
		return errorf(CodeBadRequest, "bad base_branch %q", req.BaseBranch)
	}
	bad := errorf(CodeBadRequest, "task_branch %q is not a valid branch name", req.TaskBranch)
	if req.TaskBranch == "" || strings.HasPrefix(req.TaskBranch, "-") {
		return bad
	}
	if len(req.Repositories) == 0 {
		return nil // no checkout names a branch: git need not be installed
	}
	_, ok, err := plain("/").query(ctx, "check-ref-format", "--branch", req.TaskBranch)
	if err == nil && !ok {
		err = bad
	}
	return err
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
