package etcdstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

// maxAttempts bounds how often one call plans its write again after
// losing to another writer, within its deadline.
const maxAttempts = 100

// change is one planned write: the compares its reads rely on beyond the
// journal counter, the operations that make it, and its journal entry
// (Epoch and Seq are filled in at commit).
type change struct {
	cmps  []clientv3.Cmp
	ops   []clientv3.Op
	entry state.Entry
	// lease the ops attach a claim to: its loss makes the write stale.
	lease clientv3.LeaseID
}

// storedEntry is a journal entry as kept: with the id of the write that
// made it, by which a writer whose outcome was lost in flight finds out.
type storedEntry struct {
	state.Entry
	WriteID string `json:"write_id"`
}

// plan reads through r and returns the write to make, or nil when there
// is nothing to write (the call succeeds as it is).
type plan func(r *reader) (*change, error)

// mutate runs plan and commits its change, planning again on fresh reads
// whenever another write landed in between, until the call's deadline.
func (s *Store) mutate(ctx context.Context, op string, p plan) error {
	cctx, cancel, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		r := s.newReader(ctx, cctx, op, start)
		ch, err := p(r)
		if err == nil && ch == nil {
			return nil
		}
		if err == nil {
			var landed bool
			landed, err = s.commit(r, ch)
			if err == nil && landed {
				return nil
			}
		}
		if err != nil && !errors.Is(err, errStale) {
			return err
		}
		if attempt == maxAttempts {
			return &state.ContendedError{Store: s.name, Op: op, Attempts: attempt, Waited: time.Since(start)}
		}
		// Back off with jitter: 2 ms doubling to 100 ms.
		wait := time.Duration(rand.Int64N(int64(min(2*time.Millisecond<<min(attempt, 6), 100*time.Millisecond)))) + time.Millisecond
		select {
		case <-cctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &state.ContendedError{Store: s.name, Op: op, Attempts: attempt, Waited: time.Since(start)}
		case <-time.After(wait):
		}
	}
}

// commit makes ch as one transaction with its journal entry, on the
// condition that the counter is still where r read it. It reports
// whether the write landed; false means another write came first (or the
// write was fenced off after its outcome was lost) and nothing changed.
func (s *Store) commit(r *reader, ch *change) (bool, error) {
	next := r.ctr.counter
	next.Seq++
	if r.ctr.modRev == 0 {
		// The counter is gone (the prefix was wiped): a new journal.
		next = counter{SchemaVersion: state.SchemaVersion, Epoch: state.NewEpoch(), Seq: 1, CreatedAt: s.now().UTC()}
	}
	e := ch.entry
	e.Epoch, e.Seq = next.Epoch, next.Seq
	if e.At.IsZero() {
		e.At = s.now().UTC()
	}
	wid := state.NewClaimID()
	cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.counterKey()), "=", r.ctr.modRev)}, ch.cmps...)
	ops := append(append([]clientv3.Op{}, ch.ops...),
		clientv3.OpPut(s.counterKey(), string(encode(next))),
		clientv3.OpPut(s.journalKey(e.Epoch, e.Seq), string(encode(storedEntry{Entry: e, WriteID: wid}))))

	// Leave time to settle an unknown outcome before the deadline.
	tctx, cancel := s.commitCtx(r.ctx)
	resp, err := s.cli.Txn(tctx).If(cmps...).Then(ops...).Commit()
	cancel()
	switch {
	case err == nil:
		return resp.Succeeded, nil
	case r.caller.Err() != nil:
		return false, r.caller.Err()
	case errors.Is(err, rpctypes.ErrLeaseNotFound) && ch.lease != 0:
		return false, &state.StaleClaimError{Kind: e.Kind, Name: e.Name, Reason: "its lease expired"}
	case outcomeKnown(err):
		return false, r.fail(err)
	}
	return s.settle(r, e.Epoch, e.Seq, wid, err)
}

// commitCtx is ctx less a quarter of the call's timeout, kept for
// settling an outcome lost in flight.
func (s *Store) commitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, dl.Add(-s.timeout/4))
	}
	return context.WithCancel(ctx)
}

// settle finds out whether a write whose answer was lost landed. A
// fencing transaction re-puts the counter if it is still where the write
// expected it: from then on the write can never land, so it did not.
// Otherwise the counter moved, and the entry at the write's sequence says
// whether this write moved it.
func (s *Store) settle(r *reader, epoch, seq uint64, wid string, cause error) (bool, error) {
	fence := r.ctr.raw
	if r.ctr.modRev == 0 {
		fence = encode(counter{SchemaVersion: state.SchemaVersion, Epoch: state.NewEpoch(), CreatedAt: s.now().UTC()})
	}
	key := s.journalKey(epoch, seq)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		resp, err := s.cli.Txn(r.ctx).
			If(clientv3.Compare(clientv3.ModRevision(s.counterKey()), "=", r.ctr.modRev)).
			Then(clientv3.OpPut(s.counterKey(), string(fence))).
			Else(clientv3.OpGet(key)).Commit()
		if err == nil {
			if resp.Succeeded {
				return false, nil
			}
			kvs := resp.Responses[0].GetResponseRange().GetKvs()
			var got storedEntry
			return len(kvs) > 0 && jsonInto(kvs[0].Value, &got) && got.WriteID == wid, nil
		}
		if r.caller.Err() != nil {
			return false, r.caller.Err()
		}
		select {
		case <-r.ctx.Done():
			return false, &state.UnreachableError{Store: s.name, Op: r.op, Waited: time.Since(r.start), Unknown: true, Err: cause}
		case <-time.After(wait):
		}
	}
}
