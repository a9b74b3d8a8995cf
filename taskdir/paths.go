package taskdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/ascii"
	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// taskDirRE is the task directory segment (docs/architecture.md, "On the
// host").
var taskDirRE = ascii.Word{First: ascii.Lower + ascii.Digits, Rest: ascii.Lower + ascii.Digits + "._-"}

// repoNameRE names an extra repository's child directory: one segment,
// never hidden, so it can collide with neither .git nor .kandev.
var repoNameRE = ascii.Word{First: ascii.Alnum, Rest: ascii.Alnum + "._-"}

const maxSegment = 64

// ValidTaskDir reports whether s is a task directory's name: one segment
// of taskDirRE, never hidden, at most maxSegment bytes.
func ValidTaskDir(s string) bool { return len(s) <= maxSegment && taskDirRE.MatchString(s) }

// expandPath resolves a leading ~ against the home directory and insists
// on an absolute result: the helper's working directory means nothing.
func expandPath(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errorf(CodeBadRequest, "expand %q: %v", p, err)
		}
		p = home + p[1:]
	}
	if !filepath.IsAbs(p) {
		return "", errorf(CodeBadRequest, "path %q is neither absolute nor ~-prefixed", p)
	}
	return filepath.Clean(p), nil
}

// ensureDir makes dir (0700) unless it exists, refusing a symlink or a
// non-directory there; created reports whether it made it.
func ensureDir(dir string) (created bool, err error) {
	created, err = fsx.EnsureDir(dir, 0o700)
	return created, fsError("create", dir, err)
}

// isDir reports whether dir exists, refusing a symlink or a non-directory
// there (a symlink could point our writes anywhere).
func isDir(dir string) (bool, error) {
	err := fsx.CheckDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, fsError("inspect", dir, err)
}

// readIfExists reads a regular file without following a symlink; exists
// is false when nothing is there.
func readIfExists(path string) (b []byte, exists bool, err error) {
	b, err = fsx.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, fsError("read", path, err)
}

// writeFileAtomic replaces path with data (mode 0600), so a crash never
// leaves half a file behind.
func writeFileAtomic(path string, data []byte) error {
	return fsError("write", path, fsx.WriteFile(path, data, true))
}

// fsError turns an fsx failure into the protocol's codes: a refused
// symlink or odd file is unsafe_path, anything else an I/O error.
func fsError(op, path string, err error) error {
	var ue *fsx.UnsafePathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return errorf(CodeUnsafePath, "%s %s; refusing to use it", ue.Path, ue.Reason)
	default:
		return errorf(CodeIO, "%s %s: %v", op, path, err)
	}
}
