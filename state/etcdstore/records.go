package etcdstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

func modRev(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
}

// unchanged compares a key's ModRevision with what a read found (0: the
// key was missing).
func unchanged(key string, kv *mvccpb.KeyValue) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(key), "=", modRev(kv))
}

func entryOf(kind state.Kind, name string, ev state.Event, revision uint64) *state.Entry {
	return &state.Entry{Kind: kind, Name: name, Type: ev.Type, Revision: revision, Detail: ev.Detail}
}

// Create stores a new record at revision 1; see state.Store.
func (s *Store) Create(ctx context.Context, kind state.Kind, name string, data json.RawMessage, ev state.Event) (out state.Record, err error) {
	err = s.mutate(ctx, fmt.Sprintf("create %s %s", kind, name), func(r *reader) (*change, error) {
		var ch *change
		ch, out, err = s.planCreate(r, kind, name, data, ev)
		return ch, err
	})
	return out, err
}

// Update replaces the data at revision expected; see state.Store.
func (s *Store) Update(ctx context.Context, kind state.Kind, name string, expected uint64, data json.RawMessage, ev state.Event) (out state.Record, err error) {
	err = s.mutate(ctx, fmt.Sprintf("update %s %s", kind, name), func(r *reader) (*change, error) {
		var ch *change
		ch, out, err = s.planUpdate(r, kind, name, expected, data, ev)
		return ch, err
	})
	return out, err
}

// Delete removes the record at revision expected, and its claim; see
// state.Store.
func (s *Store) Delete(ctx context.Context, kind state.Kind, name string, expected uint64, ev state.Event) error {
	return s.mutate(ctx, fmt.Sprintf("delete %s %s", kind, name), func(r *reader) (*change, error) {
		return s.planDelete(r, kind, name, expected, ev)
	})
}

// Discard removes a record that cannot be read; see state.Store.
func (s *Store) Discard(ctx context.Context, kind state.Kind, name string, ev state.Event) error {
	if err := state.ValidateKey(kind, name); err != nil {
		return err
	}
	ev, err := state.CheckEvent(ev)
	if err != nil {
		return err
	}
	rk, ck := s.recKey(kind, name), s.claimKey(kind, name)
	return s.mutate(ctx, fmt.Sprintf("discard %s %s", kind, name), func(r *reader) (*change, error) {
		kvs, err := r.get(rk)
		if err != nil {
			return nil, err
		}
		kv := kvs[rk]
		if kv == nil {
			return nil, &state.NotFoundError{Kind: kind, Name: name}
		}
		rec, err := s.decodeRecord(kind, name, kv)
		var corrupt *state.CorruptRecordError
		if !errors.As(err, &corrupt) {
			return nil, fmt.Errorf("%s %q is readable: delete it at its revision (%d), not by Discard", kind, name, rec.Revision)
		}
		return &change{cmps: []clientv3.Cmp{unchanged(rk, kv)},
			ops:   []clientv3.Op{clientv3.OpDelete(rk), clientv3.OpDelete(ck)},
			entry: entryOf(kind, name, ev, 0)}, nil
	})
}

// planCreate checks a Create; a nil change means the same data is already
// stored, which is not a write.
func (s *Store) planCreate(r *reader, kind state.Kind, name string, data json.RawMessage, ev state.Event) (*change, state.Record, error) {
	data, ev, err := state.CheckWrite(kind, name, data, ev)
	if err != nil {
		return nil, state.Record{}, err
	}
	rk := s.recKey(kind, name)
	kvs, err := r.get(rk)
	if err != nil {
		return nil, state.Record{}, err
	}
	if kv := kvs[rk]; kv != nil {
		old, err := s.decodeRecord(kind, name, kv)
		if err != nil {
			return nil, state.Record{}, err
		}
		if !bytes.Equal(old.Data, data) {
			return nil, state.Record{}, &state.ConflictError{Kind: kind, Name: name, Actual: old.Revision}
		}
		return nil, old, nil
	}
	now := s.now().UTC()
	rec := state.Record{Kind: kind, Name: name, Revision: 1, SchemaVersion: state.SchemaVersion, UpdatedAt: now, Data: data}
	e := entryOf(kind, name, ev, 1)
	e.At = now
	return &change{cmps: []clientv3.Cmp{unchanged(rk, nil)}, ops: []clientv3.Op{clientv3.OpPut(rk, string(encode(rec)))}, entry: e}, rec, nil
}

// unclaimed is the check shared by Update and Delete: the record exists,
// nobody holds a live claim on it, and it is at revision expected. It
// returns the record and the compares that keep those facts true.
func (s *Store) unclaimed(r *reader, kind state.Kind, name string, expected uint64) (state.Record, []clientv3.Cmp, error) {
	rk, ck := s.recKey(kind, name), s.claimKey(kind, name)
	kvs, err := r.get(rk, ck)
	if err != nil {
		return state.Record{}, nil, err
	}
	if kvs[rk] == nil {
		return state.Record{}, nil, &state.NotFoundError{Kind: kind, Name: name}
	}
	rec, err := s.decodeRecord(kind, name, kvs[rk])
	if err != nil {
		return state.Record{}, nil, err
	}
	c, err := s.decodeClaim(kind, name, kvs[ck])
	if err != nil {
		return state.Record{}, nil, err
	}
	if c != nil && c.live(s.now()) {
		return state.Record{}, nil, &state.ClaimedError{Kind: kind, Name: name, Holder: c.Holder}
	}
	if rec.Revision != expected {
		return state.Record{}, nil, &state.ConflictError{Kind: kind, Name: name, Expected: expected, Actual: rec.Revision}
	}
	return rec, []clientv3.Cmp{unchanged(rk, kvs[rk]), unchanged(ck, kvs[ck])}, nil
}

func (s *Store) planUpdate(r *reader, kind state.Kind, name string, expected uint64, data json.RawMessage, ev state.Event) (*change, state.Record, error) {
	data, ev, err := state.CheckWrite(kind, name, data, ev)
	if err != nil {
		return nil, state.Record{}, err
	}
	rec, cmps, err := s.unclaimed(r, kind, name, expected)
	if err != nil {
		return nil, state.Record{}, err
	}
	now := s.now().UTC()
	rec.Revision++
	rec.SchemaVersion = state.SchemaVersion
	rec.UpdatedAt = now
	rec.Data = data
	e := entryOf(kind, name, ev, rec.Revision)
	e.At = now
	return &change{cmps: cmps, ops: []clientv3.Op{clientv3.OpPut(s.recKey(kind, name), string(encode(rec)))}, entry: e}, rec, nil
}

func (s *Store) planDelete(r *reader, kind state.Kind, name string, expected uint64, ev state.Event) (*change, error) {
	if err := state.ValidateKey(kind, name); err != nil {
		return nil, err
	}
	ev, err := state.CheckEvent(ev)
	if err != nil {
		return nil, err
	}
	rec, cmps, err := s.unclaimed(r, kind, name, expected)
	if err != nil {
		return nil, err
	}
	return &change{cmps: cmps,
		ops:   []clientv3.Op{clientv3.OpDelete(s.recKey(kind, name)), clientv3.OpDelete(s.claimKey(kind, name))},
		entry: entryOf(kind, name, ev, rec.Revision)}, nil
}
