package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// The store lock is flock(2) on <dir>/lock: the kernel drops it when the
// holder dies, so a crash never leaves the store locked. Locks taken on
// separate open files conflict even within one process, so each
// transaction opens its own descriptor and goroutines serialise too.
//
// Waiting polls with LOCK_NB so it can be bounded and cancelled; a blocking
// flock could be neither.

const maxPollInterval = 50 * time.Millisecond

type heldLock struct {
	f      *os.File
	holder string
}

func (s *FileStore) lock(ctx context.Context) (*heldLock, error) {
	f, err := openNoFollow(s.path(lockFile), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for wait := time.Millisecond; ; wait = min(2*wait, maxPollInterval) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking state store %s: %w", s.dir, err)
		}
		waited := time.Since(start)
		if waited >= s.lockTimeout {
			f.Close()
			return nil, &LockedError{Path: s.dir, Waited: waited.Round(time.Millisecond), Holder: s.lockHolder()}
		}
		t := time.NewTimer(min(wait, s.lockTimeout-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("waiting for state store lock %s: %w", s.dir, ctx.Err())
		case <-t.C:
		}
	}
	l := &heldLock{f: f, holder: s.path(holderFile)}
	// Best effort: the note only improves a waiter's error message.
	if b, err := json.Marshal(currentHolder(s.now().UTC())); err == nil {
		writeFileAtomic(l.holder, b, false)
	}
	return l, nil
}

// unlock removes the holder note first, so a waiter never names a
// process that has already let go.
func (l *heldLock) unlock() {
	os.Remove(l.holder)
	l.f.Close() // closing the last descriptor releases the flock
}

// lockHolder reads the holder note; nil when absent or unreadable.
func (s *FileStore) lockHolder() *Holder {
	b, err := readFileNoFollow(s.path(holderFile))
	if err != nil {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}
