package state

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Txn runs fn once under the store lock; see Store.Txn. Reads go straight
// to disk, which nobody else can write while we hold the lock, and the
// write is applied (record, then journal entry) after fn returns nil.
func (s *FileStore) Txn(ctx context.Context, fn func(Tx) error) error {
	return s.update(ctx, func(t *tx) error {
		ft := &fileTx{s: s, t: t, ctx: ctx}
		err := fn(ft)
		ft.ended = true
		if err != nil || ft.write == nil {
			return err
		}
		return s.apply(t, ft.write)
	})
}

// fileTx is the Tx of one FileStore transaction.
type fileTx struct {
	s     *FileStore
	t     *tx
	ctx   context.Context
	write *pending // the checked write, nil when none (or a no-op Create)
	ended bool     // a write was made, or fn returned
}

// usable refuses calls after the write or after fn returned (a Tx kept
// past its Txn).
func (x *fileTx) usable() error {
	if x.ended {
		return ErrTxnWritten
	}
	return x.ctx.Err()
}

func (x *fileTx) Get(kind Kind, name string) (Record, error) {
	if err := x.usable(); err != nil {
		return Record{}, err
	}
	return x.s.get(kind, name)
}

func (x *fileTx) List(kind Kind) ([]Record, error) {
	if err := x.usable(); err != nil {
		return nil, err
	}
	return x.s.list(kind)
}

func (x *fileTx) Create(kind Kind, name string, data json.RawMessage, ev Event) (Record, error) {
	if err := x.usable(); err != nil {
		return Record{}, err
	}
	x.ended = true
	p, out, err := x.s.planCreate(x.t, kind, name, data, ev)
	x.write = p
	return out, err
}

func (x *fileTx) Update(kind Kind, name string, expected uint64, data json.RawMessage, ev Event) (Record, error) {
	if err := x.usable(); err != nil {
		return Record{}, err
	}
	x.ended = true
	p, out, err := x.s.planUpdate(x.t, kind, name, expected, data, ev)
	x.write = p
	return out, err
}

func (x *fileTx) Delete(kind Kind, name string, expected uint64, ev Event) error {
	if err := x.usable(); err != nil {
		return err
	}
	x.ended = true
	p, err := x.s.planDelete(x.t, kind, name, expected, ev)
	x.write = p
	return err
}

func (x *fileTx) CreateClaimed(kind Kind, name string, data json.RawMessage, ev Event, ttl time.Duration) (Claim, Record, error) {
	if err := x.usable(); err != nil {
		return Claim{}, Record{}, err
	}
	x.ended = true
	if ttl <= 0 {
		return Claim{}, Record{}, fmt.Errorf("claim on %s %q: ttl must be positive, got %s", kind, name, ttl)
	}
	p, out, err := x.s.planCreate(x.t, kind, name, data, ev)
	switch {
	case err != nil:
		return Claim{}, Record{}, err
	case p == nil: // the same data is there already: still not ours to claim
		return Claim{}, Record{}, &ConflictError{Kind: kind, Name: name, Actual: out.Revision}
	}
	c := Claim{ID: NewClaimID(), Kind: kind, Name: name, Holder: SelfAt(x.t.now), ExpiresAt: x.t.now.Add(ttl), TTL: ttl}
	held := c
	p.rf.Claim = &held
	claimed := ClaimEvent(EventClaimAcquired, c, "")
	p.then = &claimed
	x.write = p
	return c, out, nil
}
