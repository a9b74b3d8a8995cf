package etcdstore

import (
	"context"
	"encoding/json"

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
