package taskdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// CodeNotPrivate: a path on the way to a task directory could be changed
// by another user (owner or mode), so nothing is done in it.
const CodeNotPrivate = "not_private"

// SessionsDir is where session controllers keep their files, under a
// task directory's metaDir.
const SessionsDir = "sessions"

// NotPrivate turns a failed ownership check of path into the helper's
// error: a link or a file of the wrong type is an unsafe path, another
// owner or a loose mode is not private, and other errors stay I/O errors
// naming the path. It is the one reading of an ownership failure: reclaim's
// skip reasons follow its codes.
func NotPrivate(path string, err error) error {
	var oe *fsx.OwnershipError
	if errors.As(err, &oe) {
		code := CodeNotPrivate
		switch oe.Reason {
		case fsx.ReasonSymlink, fsx.ReasonNotDir, fsx.ReasonNotFile:
			code = CodeUnsafePath
		}
		return errorf(code, "%v; %s", oe, oe.Hint())
	}
	return errorf(CodeIO, "inspect %s: %v", path, err)
}

// PrivateRoot resolves the workdir root (which the bootstrap created) to
// its physical path and checks it and every directory above it, so that
// everything below is reached through directories only the login user can
// change.
func PrivateRoot(root string) (string, error) {
	r, err := expandPath(root)
	if err != nil {
		return "", err
	}
	phys, err := fsx.Physical(r)
	if err != nil {
		return "", errorf(CodeIO, "resolve workdir root %s: %v", r, err)
	}
	uid := os.Getuid()
	if err := fsx.CheckAncestors(phys, uid); err != nil {
		return "", NotPrivate(phys, err)
	}
	if err := fsx.CheckPrivate(phys, uid, true); err != nil {
		return "", NotPrivate(phys, err)
	}
	return phys, nil
}

// AbsentRoot reports whether root, ~ expanded, does not exist at all (a
// root nothing was ever made under), and where it would be.
func AbsentRoot(root string) (string, bool) {
	r, err := expandPath(root)
	if err != nil {
		return "", false
	}
	_, err = os.Lstat(r)
	return r, errors.Is(err, fs.ErrNotExist)
}

// ensurePrivateDir creates dir (0700) below a checked parent unless it
// exists, and checks it.
func ensurePrivateDir(dir string) (created bool, err error) {
	created, err = fsx.EnsurePrivateDir(dir, os.Getuid())
	if err != nil {
		return false, NotPrivate(dir, err)
	}
	return created, nil
}

// CheckTaskDir verifies an existing task directory the way Prepare made
// it: <root>/tasks/<one segment>, with the root, every directory above
// it, tasks/, the task directory and its .kandev/ (when present) provably
// the login user's alone. Every operation on a task directory after
// Prepare starts here.
func CheckTaskDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return errorf(CodeBadRequest, "task directory %q is not a clean absolute path", dir)
	}
	tasks := filepath.Dir(dir)
	if filepath.Base(tasks) != "tasks" || !ValidTaskDir(filepath.Base(dir)) {
		return errorf(CodeBadRequest, "%s is not <root>/tasks/<task-dir>", dir)
	}
	root := filepath.Dir(tasks)
	if phys, err := PrivateRoot(root); err != nil {
		return err
	} else if phys != root {
		return errorf(CodeBadRequest, "%s is not a physical path (its root resolves to %s)", dir, phys)
	}
	uid := os.Getuid()
	for _, p := range []string{tasks, dir} {
		if err := fsx.CheckPrivate(p, uid, true); err != nil {
			return NotPrivate(p, err)
		}
	}
	meta := filepath.Join(dir, metaDir)
	if err := fsx.CheckPrivate(meta, uid, true); err != nil && !errors.Is(err, os.ErrNotExist) {
		return NotPrivate(meta, err)
	}
	return nil
}

// EnsureSessionDir checks taskDir (CheckTaskDir) and makes
// <taskDir>/.kandev/sessions/<sessionID>/ exist, every level 0700 and
// the login user's alone, for a session controller's files.
func EnsureSessionDir(taskDir, sessionID string) (string, error) {
	if !ValidTaskDir(sessionID) {
		return "", errorf(CodeBadRequest, "session id %q is not one segment of [a-z0-9][a-z0-9._-]*", sessionID)
	}
	if err := CheckTaskDir(taskDir); err != nil {
		return "", err
	}
	dir := taskDir
	for _, seg := range []string{metaDir, SessionsDir, sessionID} {
		dir = filepath.Join(dir, seg)
		if _, err := ensurePrivateDir(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// SessionsPath is where taskDir's session directories are.
func SessionsPath(taskDir string) string { return filepath.Join(taskDir, metaDir, SessionsDir) }
