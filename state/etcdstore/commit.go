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

// maxAttempts bounds how often one call plans its write again, within its
// deadline.
const maxAttempts = 100

// change is one planned write: the compares its reads rely on, the
// operations that make it, and its journal entry (Epoch and Seq are
// filled in at commit). A change without an entry (a claim renewal, an
// import) carries its own compares and is idempotent, so it needs neither
// the counter nor settling.
type change struct {
	cmps  []clientv3.Cmp
	ops   []clientv3.Op
	entry *state.Entry
	// claim is the claim the ops put on its lease, whose loss makes the
	// write stale.
	claim *storedClaim
	// then is a second journal entry of the same write (the claim a
	// CreateClaimed took), numbered right after entry.
	then *state.Entry
}

// storedEntry is a journal entry as kept: with the id of the write that
// made it, by which a writer whose outcome was lost in flight finds out.
type storedEntry struct {
	state.Entry
	WriteID string `json:"write_id,omitempty"`
}

// plan reads through r and returns the write to make, or nil when there
// is nothing to write (the call succeeds as it is).
type plan func(r *reader) (*change, error)

// mutate runs plan and commits its change, planning again on fresh reads
// whenever another write landed in between or an attempt found the
// cluster unreachable, until the call's deadline.
func (s *Store) mutate(ctx context.Context, op string, p plan) error {
	c, err := s.begin(ctx, op)
	if err != nil {
		return err
	}
	defer c.end()
	for attempt := 1; ; attempt++ {
		actx, cancel := c.attempt()
		r := &reader{call: c, ctx: actx}
		ch, err := p(r)
		landed := false
		if err == nil && ch != nil {
			landed, err = s.commit(r, ch)
		}
		cancel()
		var ue *state.UnreachableError
		switch {
		case err == nil && (ch == nil || landed):
			return nil
		case err == nil, errors.Is(err, errStale):
			// Lost to another writer: back off below, then plan again.
		case errors.As(err, &ue) && !ue.Unknown:
			if c.again(err) {
				continue
			}
			if c.caller.Err() != nil {
				return c.caller.Err()
			}
			return c.unreachable(ue)
		default:
			return err
		}
		if attempt == maxAttempts {
			return &state.ContendedError{Store: s.name, Op: op, Attempts: attempt, Waited: time.Since(c.start)}
		}
		// Back off with jitter: 2 ms doubling to 100 ms.
		wait := time.Duration(rand.Int64N(int64(min(2*time.Millisecond<<min(attempt, 6), 100*time.Millisecond)))) + time.Millisecond
		select {
		case <-c.ctx.Done():
			if c.caller.Err() != nil {
				return c.caller.Err()
			}
			return &state.ContendedError{Store: s.name, Op: op, Attempts: attempt, Waited: time.Since(c.start)}
		case <-time.After(wait):
		}
	}
}

// commit makes ch, with its journal entry as one transaction on the
// condition that the counter is still where r read it. It reports whether
// the write landed; false means another write came first (or the write
// was fenced off after its outcome was lost) and nothing changed.
func (s *Store) commit(r *reader, ch *change) (bool, error) {
	if ch.entry == nil {
		resp, err := s.cli.Txn(r.ctx).If(ch.cmps...).Then(ch.ops...).Commit()
		if err != nil {
			return false, s.leaseErr(r, ch, err)
		}
		return resp.Succeeded, nil
	}
	cmps, ops, e, wid := s.stamp(r, ch)
	tctx, cancel := s.commitCtx(r)
	resp, err := s.cli.Txn(tctx).If(cmps...).Then(ops...).Commit()
	cancel()
	switch {
	case err == nil:
		return resp.Succeeded, nil
	case r.caller.Err() != nil:
		return false, r.caller.Err()
	case outcomeKnown(err):
		return false, s.leaseErr(r, ch, err)
	}
	return s.settle(r, e.Epoch, e.Seq, wid, err)
}

// stamp numbers ch's journal entry after the counter r read, with a fresh
// write id, and returns the transaction that makes it.
func (s *Store) stamp(r *reader, ch *change) ([]clientv3.Cmp, []clientv3.Op, state.Entry, string) {
	next := r.ctr.counter
	next.Seq++
	if r.ctr.modRev == 0 {
		// The counter is gone (the prefix was wiped): a new journal.
		next = counter{SchemaVersion: state.SchemaVersion, Epoch: state.NewEpoch(), Seq: 1, CreatedAt: s.now().UTC()}
	}
	e := *ch.entry
	e.Epoch, e.Seq = next.Epoch, next.Seq
	if e.At.IsZero() {
		e.At = s.now().UTC()
	}
	wid := state.NewClaimID()
	cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.counterKey()), "=", r.ctr.modRev)}, ch.cmps...)
	ops := append(append([]clientv3.Op{}, ch.ops...),
		clientv3.OpPut(s.journalKey(e.Epoch, e.Seq), string(encode(storedEntry{Entry: e, WriteID: wid}))))
	if ch.then != nil {
		e2 := *ch.then
		next.Seq++
		e2.Epoch, e2.Seq = next.Epoch, next.Seq
		if e2.At.IsZero() {
			e2.At = e.At
		}
		ops = append(ops, clientv3.OpPut(s.journalKey(e2.Epoch, e2.Seq), string(encode(storedEntry{Entry: e2, WriteID: wid}))))
	}
	ops = append(ops, clientv3.OpPut(s.counterKey(), string(encode(next))))
	return cmps, ops, e, wid
}

// leaseErr: a write on a claim whose lease is gone is stale.
func (s *Store) leaseErr(r *reader, ch *change, err error) error {
	if errors.Is(err, rpctypes.ErrLeaseNotFound) && ch.claim != nil {
		return &state.StaleClaimError{Kind: ch.claim.Kind, Name: ch.claim.Name, Reason: "its lease expired"}
	}
	return r.fail(err)
}

// commitCtx bounds the commit by its attempt, and leaves a quarter of the
// call's timeout to settle an outcome lost in flight.
func (s *Store) commitCtx(r *reader) (context.Context, context.CancelFunc) {
	if dl, ok := r.call.ctx.Deadline(); ok {
		return context.WithDeadline(r.ctx, dl.Add(-s.timeout/4))
	}
	return context.WithCancel(r.ctx)
}

// settle finds out whether a write whose answer was lost landed. A
// fencing transaction re-puts the counter if it is still where the write
// expected it: from then on the write can never land, so it did not.
// Otherwise the counter moved, and the entry at the write's sequence says
// whether this write moved it. Any answer settles it; a fence that gets
// none is tried again (a late one is harmless: its compare fails).
func (s *Store) settle(r *reader, epoch, seq uint64, wid string, cause error) (bool, error) {
	fence := r.ctr.raw
	if r.ctr.modRev == 0 {
		fence = encode(counter{SchemaVersion: state.SchemaVersion, Epoch: state.NewEpoch(), CreatedAt: s.now().UTC()})
	}
	key := s.journalKey(epoch, seq)
	for {
		actx, cancel := r.call.attempt()
		resp, err := s.cli.Txn(actx).
			If(clientv3.Compare(clientv3.ModRevision(s.counterKey()), "=", r.ctr.modRev)).
			Then(clientv3.OpPut(s.counterKey(), string(fence))).
			Else(clientv3.OpGet(key)).Commit()
		cancel()
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
		case <-r.call.ctx.Done():
			return false, &state.UnreachableError{Store: s.name, Op: r.op, Waited: time.Since(r.start), Unknown: true, Err: cause}
		case <-time.After(25 * time.Millisecond):
		}
	}
}
