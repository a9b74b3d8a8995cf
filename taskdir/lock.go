package taskdir

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

const lockFile = "lock"

// LockFiles are the task directory lock's file and its holder note,
// relative to the task directory: a reclamation's walk leaves them out,
// since taking the lock again rewrites the note.
var LockFiles = []string{path.Join(metaDir, lockFile), path.Join(metaDir, lockFile) + fsx.NoteSuffix}

// LockHolder is the process holding taskDir's lock as its note says; nil
// when the note is absent or unreadable.
func LockHolder(taskDir string) *fsx.Holder {
	return fsx.ReadHolder(filepath.Join(taskDir, metaDir, lockFile))
}

// lockWait bounds how long prepare and run-script wait for a task dir's
// lock: the holder is an earlier launch whose preparation outlived its
// CLI, and waiting it out silently could take as long as its timeout.
var lockWait = 5 * time.Second

// LockTaskDir takes the exclusive lock on <taskDir>/.kandev/lock that
// prepare, run-script and reclamation hold for their whole duration, so
// that a resume never runs a second preparation next to one an earlier,
// crashed CLI left running on the host, and nothing is removed under
// either. The returned release drops it.
func LockTaskDir(ctx context.Context, taskDir string) (release func(), err error) {
	l, err := LockRenamable(ctx, taskDir)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// Lock is a held task directory lock.
type Lock struct{ l *fsx.Lock }

// LockRenamable is LockTaskDir for a holder that renames the directory
// while it holds the lock: Moved says where it is now.
func LockRenamable(ctx context.Context, taskDir string) (*Lock, error) {
	meta := filepath.Join(taskDir, metaDir)
	if _, err := ensurePrivateDir(meta); err != nil {
		return nil, err
	}
	path := filepath.Join(meta, lockFile)
	l, err := fsx.Acquire(ctx, path, fsx.LockOptions{What: "task directory", Path: taskDir, Wait: lockWait})
	var le *fsx.LockedError
	switch {
	case err == nil:
		return &Lock{l}, nil
	case errors.As(err, &le):
		return nil, busyError(taskDir, path, le.Holder)
	case ctx.Err() != nil:
		// The request's own timeout ran out while waiting.
		return nil, busyError(taskDir, path, fsx.ReadHolder(path))
	default:
		return nil, fsError("lock", path, err)
	}
}

// Moved says the locked directory is at taskDir now, so that Release
// removes the holder note there.
func (l *Lock) Moved(taskDir string) { l.l.Moved(filepath.Join(taskDir, metaDir, lockFile)) }

// Stat describes the lock file held (fsx.Lock.Stat); a nil Lock, one
// never taken, has no file, and is no lock a holder can match.
func (l *Lock) Stat() (os.FileInfo, error) {
	if l == nil {
		return nil, errors.New("the task directory's lock was not taken")
	}
	return l.l.Stat()
}

// Release removes the holder note and drops the lock; a nil Lock, one
// never taken, holds nothing to release.
func (l *Lock) Release() {
	if l != nil {
		l.l.Release()
	}
}

func busyError(taskDir, path string, h *fsx.Holder) error {
	holder := "unknown"
	if h != nil {
		holder = strconv.Itoa(h.PID)
	}
	return errorf(CodeBusy, "%s is busy: an earlier launch's preparation is still running there (pid %s holds %s); wait for it to finish or stop it, then resume",
		taskDir, holder, path)
}
