package state

import (
	"context"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// The store lock is fsx's bounded flock on <dir>/lock, its holder noted in
// <dir>/lock.holder. Each transaction takes its own lock, so goroutines
// serialise too; reads never take it.

type heldLock struct{ l *fsx.Lock }

func (s *FileStore) lock(ctx context.Context) (heldLock, error) {
	h := SelfAt(s.now().UTC())
	l, err := fsx.Acquire(ctx, s.path(lockFile), fsx.LockOptions{What: "state store", Path: s.dir, Wait: s.lockTimeout,
		Holder: fsx.Holder{PID: h.PID, Command: h.Command, Since: h.Since}})
	return heldLock{l}, err
}

func (h heldLock) unlock() { h.l.Release() }
