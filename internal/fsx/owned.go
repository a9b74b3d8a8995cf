package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kdlbs/kandev-exec/internal/shquote"
)

// The ownership rules for what kandev-exec creates or runs on a host
// (docs/security.md, "What is checked on the host"). Another local user
// who can write to a directory on the path can rename what is in it and
// put their own file or directory in its place, so a path is trusted only
// when nobody but the login user (and root) could have changed it:
//
//   - every directory above the workdir root is owned by root or the
//     login user and writable by nobody else, unless it is sticky (like
//     /tmp, where others cannot rename what is ours), the rule OpenSSH's
//     StrictModes applies to ~/.ssh;
//   - the root and everything below it that we use is owned by the login
//     user, writable by nobody else, and never a symbolic link.
//
// The bootstrap script that runs before the helper can be trusted applies
// the same rules in /bin/sh (see internal/remote's hostcheck.go); a test
// holds the two to the same verdicts.

// Ownership reasons, shared word for word with the shell twin.
const (
	ReasonSymlink       = "is a symbolic link"
	ReasonNotDir        = "is not a directory"
	ReasonNotFile       = "is not a regular file"
	ReasonOwner         = "is owned by another user"
	ReasonWritable      = "is writable by group or others"
	ReasonWritableNoStk = "is writable by group or others and not sticky"
)

// OwnershipError is a path that is not provably the login user's.
type OwnershipError struct {
	Path   string
	UID    int         // the owner found
	Mode   fs.FileMode // as found (type and permission bits)
	Reason string      // one of the Reason constants
}

func (e *OwnershipError) Error() string {
	return fmt.Sprintf("%s %s (owner uid %d, mode %s)", e.Path, e.Reason, e.UID, modeString(e.Mode))
}

// Hint says what to do about it.
func (e *OwnershipError) Hint() string {
	switch e.Reason {
	case ReasonWritable, ReasonWritableNoStk:
		return fmt.Sprintf("run `chmod go-w %s` on the host if that is safe, or set workdir_root to a directory only you can write", shquote.Quote(e.Path))
	}
	return fmt.Sprintf("move %s away on the host, or set workdir_root to a directory only you can write", e.Path)
}

// modeString renders a mode like ls -l (drwx------), including the sticky
// bit, so the message reads the way the user will check it.
func modeString(m fs.FileMode) string {
	s := []byte(m.Perm().String()) // -rwxrwxrwx
	switch {
	case m&fs.ModeSymlink != 0:
		s[0] = 'l'
	case m.IsDir():
		s[0] = 'd'
	case !m.IsRegular():
		s[0] = '?'
	}
	if m&fs.ModeSticky != 0 {
		if s[9] == 'x' {
			s[9] = 't'
		} else {
			s[9] = 'T'
		}
	}
	return string(s)
}

// owner returns the uid of fi's file.
func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

const groupOrOtherWrite = 0o022

// CheckPrivate verifies that path itself (never followed) is a directory
// (dir true) or regular file owned by uid and writable by nobody else.
func CheckPrivate(path string, uid int, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	bad := func(reason string) error {
		return &OwnershipError{Path: path, UID: owner(fi), Mode: fi.Mode(), Reason: reason}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return bad(ReasonSymlink)
	case dir && !fi.IsDir():
		return bad(ReasonNotDir)
	case !dir && !fi.Mode().IsRegular():
		return bad(ReasonNotFile)
	case owner(fi) != uid:
		return bad(ReasonOwner)
	case fi.Mode().Perm()&groupOrOtherWrite != 0:
		return bad(ReasonWritable)
	}
	return nil
}

// CheckAncestors verifies every directory above path, up to /, by the
// StrictModes rule: owned by root or uid, and writable by nobody else
// unless sticky. path must be absolute and free of symbolic links (see
// Physical); a parent that is a link is refused rather than followed.
func CheckAncestors(path string, uid int) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("check ancestors of %q: not an absolute path", path)
	}
	for p := filepath.Dir(filepath.Clean(path)); ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		bad := func(reason string) error {
			return &OwnershipError{Path: p, UID: owner(fi), Mode: fi.Mode(), Reason: reason}
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return bad(ReasonSymlink)
		case !fi.IsDir():
			return bad(ReasonNotDir)
		case owner(fi) != 0 && owner(fi) != uid:
			return bad(ReasonOwner)
		case fi.Mode().Perm()&groupOrOtherWrite != 0 && fi.Mode()&fs.ModeSticky == 0:
			return bad(ReasonWritableNoStk)
		}
		if p == "/" {
			return nil
		}
	}
}

// Physical resolves every symbolic link in path, so that the checks above
// and every later use name the same directories: a link that another user
// swaps after the check no longer matters.
func Physical(path string) (string, error) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// EnsurePrivateDir creates dir (0700) unless it exists, then checks it
// with CheckPrivate; created reports whether it made it. Its parent must
// already have been checked.
func EnsurePrivateDir(dir string, uid int) (created bool, err error) {
	err = os.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		created = true
	case !errors.Is(err, fs.ErrExist):
		return false, err
	}
	return created, CheckPrivate(dir, uid, true)
}
