package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

// Txn runs fn on reads at one revision and commits its write with the
// journal counter compared; see state.Store. When anything was written
// since fn read, nothing lands and fn runs again on fresh reads.
func (s *Store) Txn(ctx context.Context, fn func(state.Tx) error) error {
	return s.mutate(ctx, "transaction", func(r *reader) (*change, error) {
		tx := &etcdTx{s: s, r: r}
		err := fn(tx)
		tx.ended = true
		if err != nil {
			return nil, err
		}
		return tx.write, nil
	})
}

// etcdTx is the Tx of one run of fn.
type etcdTx struct {
	s     *Store
	r     *reader
	write *change // the checked write, nil when none (or a no-op Create)
	ended bool    // a write was made, or fn returned
}

func (x *etcdTx) usable() error {
	if x.ended {
		return state.ErrTxnWritten
	}
	return x.r.caller.Err()
}

func (x *etcdTx) Get(kind state.Kind, name string) (state.Record, error) {
	if err := x.usable(); err != nil {
		return state.Record{}, err
	}
	if err := state.ValidateKey(kind, name); err != nil {
		return state.Record{}, err
	}
	k := x.s.recKey(kind, name)
	kvs, err := x.r.get(k)
	if err != nil {
		return state.Record{}, err
	}
	if kvs[k] == nil {
		return state.Record{}, &state.NotFoundError{Kind: kind, Name: name}
	}
	return x.s.decodeRecord(kind, name, kvs[k])
}

func (x *etcdTx) List(kind state.Kind) ([]state.Record, error) {
	if err := x.usable(); err != nil {
		return nil, err
	}
	if err := state.ValidateKind(kind); err != nil {
		return nil, err
	}
	kvs, err := x.r.list(x.s.recPrefix(kind))
	if err != nil {
		return nil, err
	}
	return x.s.decodeList(kind, kvs)
}

func (x *etcdTx) Create(kind state.Kind, name string, data json.RawMessage, ev state.Event) (state.Record, error) {
	if err := x.usable(); err != nil {
		return state.Record{}, err
	}
	x.ended = true
	ch, out, err := x.s.planCreate(x.r, kind, name, data, ev)
	x.write = ch
	return out, err
}

func (x *etcdTx) Update(kind state.Kind, name string, expected uint64, data json.RawMessage, ev state.Event) (state.Record, error) {
	if err := x.usable(); err != nil {
		return state.Record{}, err
	}
	x.ended = true
	ch, out, err := x.s.planUpdate(x.r, kind, name, expected, data, ev)
	x.write = ch
	return out, err
}

func (x *etcdTx) Delete(kind state.Kind, name string, expected uint64, ev state.Event) error {
	if err := x.usable(); err != nil {
		return err
	}
	x.ended = true
	ch, err := x.s.planDelete(x.r, kind, name, expected, ev)
	x.write = ch
	return err
}

// CreateClaimed creates the record and puts its claim on a new lease in
// the same transaction, with both journal entries; see state.Tx. A lease
// granted for a run of fn that does not commit expires by itself.
func (x *etcdTx) CreateClaimed(kind state.Kind, name string, data json.RawMessage, ev state.Event, ttl time.Duration) (state.Claim, state.Record, error) {
	if err := x.usable(); err != nil {
		return state.Claim{}, state.Record{}, err
	}
	x.ended = true
	if ttl <= 0 {
		return state.Claim{}, state.Record{}, fmt.Errorf("claim on %s %q: ttl must be positive, got %s", kind, name, ttl)
	}
	ch, out, err := x.s.planCreate(x.r, kind, name, data, ev)
	switch {
	case err != nil:
		return state.Claim{}, state.Record{}, err
	case ch == nil: // the same data is there already: still not ours to claim
		return state.Claim{}, state.Record{}, &state.ConflictError{Kind: kind, Name: name, Actual: out.Revision}
	}
	lease, err := x.s.grant(x.r.ctx, fmt.Sprintf("claim %s %s", kind, name), ttl)
	if err != nil {
		return state.Claim{}, state.Record{}, err
	}
	now := ch.entry.At
	c := state.Claim{ID: state.NewClaimID(), Kind: kind, Name: name, Holder: state.SelfAt(now), ExpiresAt: now.Add(ttl), TTL: ttl}
	stored := &storedClaim{Claim: c, Lease: lease}
	ck := x.s.claimKey(kind, name)
	ch.cmps = append(ch.cmps, unchanged(ck, nil))
	ch.ops = append(ch.ops, clientv3.OpPut(ck, string(encode(stored)), clientv3.WithLease(lease)))
	ch.claim = stored
	claimed := entryOf(kind, name, state.ClaimEvent(state.EventClaimAcquired, c, ""), 1)
	claimed.At = now
	ch.then = claimed
	x.write = ch
	return c, out, nil
}
