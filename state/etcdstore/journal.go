package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

// Epoch returns the current journal epoch.
func (s *Store) Epoch(ctx context.Context) (uint64, error) {
	c, err := s.counter(ctx)
	return c.Epoch, err
}

// Journal returns the entries of the current epoch with Seq > after.
func (s *Store) Journal(ctx context.Context, after uint64) ([]state.Entry, error) {
	es, _, err := s.journal(ctx, 0, after)
	return es, err
}

// journal reads the current epoch's entries past (epoch, after) (the
// whole journal when epoch is not current; epoch 0 means current), and
// the store revision it read at.
func (s *Store) journal(ctx context.Context, epoch, after uint64) ([]state.Entry, int64, error) {
	c, err := s.begin(ctx, "read the journal")
	if err != nil {
		return nil, 0, err
	}
	defer c.end()
	var out []state.Entry
	var rev int64
	err = c.retry(func(actx context.Context) (err error) {
		out, rev, err = s.readJournal(&reader{call: c, ctx: actx}, epoch, after)
		return err
	})
	return out, rev, err
}

// readJournal is one attempt of journal.
func (s *Store) readJournal(r *reader, epoch, after uint64) ([]state.Entry, int64, error) {
	if _, err := r.get(); err != nil {
		return nil, 0, err
	}
	if r.ctr.modRev == 0 {
		return []state.Entry{}, r.rev, nil
	}
	cur := r.ctr.Epoch
	if epoch != 0 && epoch != cur {
		after = 0
	}
	if after >= r.ctr.Seq {
		return []state.Entry{}, r.rev, nil
	}
	kvs, err := s.rangeFrom(r.ctx, s.journalKey(cur, after+1), clientv3.GetPrefixRangeEnd(s.journalPrefix(cur)), r.rev)
	if err != nil {
		return nil, 0, r.fail(err)
	}
	out := make([]state.Entry, 0, len(kvs))
	for _, kv := range kvs {
		var e storedEntry
		if !jsonInto(kv.Value, &e) || e.Epoch != cur {
			return nil, 0, fmt.Errorf("state store %s: journal entry %s is unreadable", s.name, kv.Key)
		}
		out = append(out, e.Entry)
	}
	return out, r.rev, nil
}

// Follow waits for entries past (epoch, after); see state.Store. It
// watches the journal counter, which every write moves, from just after
// the revision it read at, so nothing written in between is missed.
func (s *Store) Follow(ctx context.Context, epoch, after uint64) ([]state.Entry, error) {
	for {
		es, rev, err := s.journal(ctx, epoch, after)
		if err != nil || len(es) > 0 {
			return es, err
		}
		if err := s.waitCounter(ctx, rev); err != nil {
			return nil, err
		}
	}
}

// waitCounter returns when the counter changes after rev, when the watch
// ends (a compaction, a lost leader: the caller reads again), or after
// the call timeout, so that a follower with nothing to wake it still
// reads now and then, and reports a store gone unreachable.
func (s *Store) waitCounter(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), s.timeout)
	defer cancel()
	w := s.cli.Watch(wctx, s.counterKey(), clientv3.WithRev(rev+1))
	select {
	case <-w:
	case <-wctx.Done():
	}
	return ctx.Err()
}
