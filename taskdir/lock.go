package taskdir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const lockFile = "lock"

// lockWait bounds how long prepare and run-script wait for a task dir's
// lock: the holder is an earlier launch whose preparation outlived its
// CLI, and waiting it out silently could take as long as its timeout.
var lockWait = 5 * time.Second

const lockPoll = 50 * time.Millisecond

// LockTaskDir takes the exclusive flock on <taskDir>/.kandev/lock that
// prepare and run-script hold for their whole duration, so that a resume
// never runs a second preparation next to one an earlier, crashed CLI
// left running on the host. The holder's pid is written into the file.
// The returned release closes it, dropping the lock.
func LockTaskDir(ctx context.Context, taskDir string) (release func(), err error) {
	meta := filepath.Join(taskDir, metaDir)
	if _, err := ensurePrivateDir(meta); err != nil {
		return nil, err
	}
	path := filepath.Join(meta, lockFile)
	// Checked before the open so a FIFO or device never blocks it; the
	// open refuses a symlink planted in between.
	if _, err := regularFile(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errorf(CodeUnsafePath, "%s is a symbolic link; refusing to use it", path)
	}
	if err != nil {
		return nil, errorf(CodeIO, "open %s: %v", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errorf(CodeUnsafePath, "%s is not a regular file", path)
	}
	fd := int(f.Fd())
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, errorf(CodeIO, "lock %s: %v", path, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			holder := "unknown"
			if b, err := os.ReadFile(path); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
					holder = strconv.Itoa(pid)
				}
			}
			f.Close()
			return nil, errorf(CodeBusy, "%s is busy: an earlier launch's preparation is still running there (pid %s holds %s); wait for it to finish or stop it, then resume",
				taskDir, holder, path)
		}
		select {
		case <-ctx.Done():
		case <-time.After(lockPoll):
		}
	}
	// Only for the message a waiter shows: the lock itself is the flock.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
