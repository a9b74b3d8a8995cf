package taskdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// taskDirRE is the task directory segment (DESIGN.md, Remote layout).
var taskDirRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// repoNameRE names an extra repository's child directory: one segment,
// never hidden, so it can collide with neither .git nor .kandev.
var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

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
	exists, err := isDir(dir)
	if err != nil || exists {
		return false, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return false, errorf(CodeIO, "create %s: %v", dir, err)
	}
	return true, nil
}

// isDir reports whether dir exists, refusing a symlink or a non-directory
// there (a symlink could point our writes anywhere).
func isDir(dir string) (bool, error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, errorf(CodeIO, "inspect %s: %v", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return false, errorf(CodeUnsafePath, "%s is a symbolic link; refusing to use it", dir)
	case !fi.IsDir():
		return false, errorf(CodeUnsafePath, "%s is not a directory", dir)
	}
	return true, nil
}

// regularFile reports whether path is a regular file, refusing anything
// else that sits there (a symlink could point a write anywhere).
func regularFile(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, errorf(CodeIO, "inspect %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return false, errorf(CodeUnsafePath, "%s is not a regular file", path)
	}
	return true, nil
}

// writeFileAtomic replaces path with data (mode 0600) through a temp file
// and a rename, so a crash never leaves half a file behind.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return errorf(CodeIO, "write %s: %v", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return errorf(CodeIO, "write %s: %v", path, err)
	}
	return nil
}
