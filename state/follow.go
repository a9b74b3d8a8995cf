package state

import (
	"context"
	"os"
	"syscall"
	"time"
)

// followPoll is how often Follow looks at the journal file. Only its
// size, time and identity are read until they change.
const followPoll = 50 * time.Millisecond

// Follow waits for entries past (epoch, after); see Store.Follow.
func (s *FileStore) Follow(ctx context.Context, epoch, after uint64) ([]Entry, error) {
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	var seen journalStamp
	for {
		if err := s.ready(ctx); err != nil {
			return nil, err
		}
		if now := s.journalStamp(); now != seen {
			seen = now
			es, err := s.newEntries(ctx, epoch, after)
			if err != nil || len(es) > 0 {
				return es, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// newEntries is Journal past (epoch, after): the whole new epoch when the
// journal was re-created meanwhile.
func (s *FileStore) newEntries(ctx context.Context, epoch, after uint64) ([]Entry, error) {
	cur, err := s.Epoch(ctx)
	if err != nil {
		return nil, err
	}
	if cur != epoch {
		after = 0
	}
	return s.Journal(ctx, after)
}

// journalStamp changes whenever the journal or meta.json is written or
// replaced.
type journalStamp struct {
	jSize, mSize   int64
	jTime, mTime   time.Time
	jIno, mIno     uint64
	jMissing, mErr bool
}

func (s *FileStore) journalStamp() journalStamp {
	var st journalStamp
	if fi, err := os.Lstat(s.path(journalFile)); err == nil {
		st.jSize, st.jTime, st.jIno = fi.Size(), fi.ModTime(), inode(fi)
	} else {
		st.jMissing = true
	}
	if fi, err := os.Lstat(s.path(metaFile)); err == nil {
		st.mSize, st.mTime, st.mIno = fi.Size(), fi.ModTime(), inode(fi)
	} else {
		st.mErr = true
	}
	return st
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
