package etcdstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

// importBatch is how many journal entries one import transaction puts,
// under etcd's default limit of 128 operations per transaction.
const importBatch = 100

// Kinds lists the kinds holding records, one range request per kind.
func (s *Store) Kinds(ctx context.Context) ([]state.Kind, error) {
	c, err := s.begin(ctx, "list kinds")
	if err != nil {
		return nil, err
	}
	defer c.end()
	base := s.prefix + "rec/"
	end := clientv3.GetPrefixRangeEnd(base)
	var kinds []state.Kind
	err = c.retry(func(actx context.Context) error {
		kinds = []state.Kind{}
		var rev int64
		for from := base; ; {
			resp, err := s.cli.Get(actx, from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly(), clientv3.WithRev(rev))
			if err != nil || len(resp.Kvs) == 0 {
				return err
			}
			rev = resp.Header.Revision
			k, _, _ := strings.Cut(strings.TrimPrefix(string(resp.Kvs[0].Key), base), "/")
			if state.ValidateKind(state.Kind(k)) == nil {
				kinds = append(kinds, state.Kind(k))
			}
			from = clientv3.GetPrefixRangeEnd(base + k + "/")
		}
	})
	return kinds, err
}

// apply commits an import: the compares and operations plan returns, on
// the condition that the journal counter is where the plan read it (a
// plan that does not change the counter re-puts it, so that transactions
// that read before notice). Imports are idempotent: an outcome lost in
// flight is reported, and a rerun of the migration repeats the import.
func (s *Store) apply(ctx context.Context, op string, plan func(r *reader) ([]clientv3.Cmp, []clientv3.Op, error)) error {
	return s.mutate(ctx, op, func(r *reader) (*change, error) {
		if _, err := r.get(); err != nil {
			return nil, err
		}
		if r.ctr.modRev == 0 {
			return nil, fmt.Errorf("state store %s: the journal counter %s is missing; open the store again to recreate it", s.name, s.counterKey())
		}
		cmps, ops, err := plan(r)
		if err != nil || ops == nil {
			return nil, err
		}
		cmps = append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.counterKey()), "=", r.ctr.modRev)}, cmps...)
		return &change{cmps: cmps, ops: ops}, nil
	})
}

// ImportRecord puts r as given and drops its claim; see state.Copier.
func (s *Store) ImportRecord(ctx context.Context, r state.Record) error {
	if err := state.ValidateKey(r.Kind, r.Name); err != nil {
		return err
	}
	if r.Revision == 0 {
		return fmt.Errorf("import of %s %q: revision 0", r.Kind, r.Name)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, r.Data); err != nil {
		return fmt.Errorf("import of %s %q: record data is not valid JSON: %w", r.Kind, r.Name, err)
	}
	r.Data = buf.Bytes()
	return s.apply(ctx, fmt.Sprintf("import %s %s", r.Kind, r.Name), func(rd *reader) ([]clientv3.Cmp, []clientv3.Op, error) {
		return nil, []clientv3.Op{clientv3.OpPut(s.recKey(r.Kind, r.Name), string(encode(r))),
			clientv3.OpDelete(s.claimKey(r.Kind, r.Name)), clientv3.OpPut(s.counterKey(), string(rd.ctr.raw))}, nil
	})
}

// RemoveRecord deletes a record and its claim; see state.Copier.
func (s *Store) RemoveRecord(ctx context.Context, kind state.Kind, name string) error {
	if err := state.ValidateKey(kind, name); err != nil {
		return err
	}
	return s.apply(ctx, fmt.Sprintf("remove %s %s", kind, name), func(rd *reader) ([]clientv3.Cmp, []clientv3.Op, error) {
		return nil, []clientv3.Op{clientv3.OpDelete(s.recKey(kind, name)), clientv3.OpDelete(s.claimKey(kind, name)),
			clientv3.OpPut(s.counterKey(), string(rd.ctr.raw))}, nil
	})
}

// ImportJournal appends es in batches, each one transaction with the
// counter; see state.Copier.
func (s *Store) ImportJournal(ctx context.Context, epoch uint64, es []state.Entry) error {
	// Once at least: an import of no entries still adopts the epoch.
	for first := true; first || len(es) > 0; first = false {
		batch := es[:min(len(es), importBatch)]
		es = es[len(batch):]
		err := s.apply(ctx, "import the journal", func(r *reader) ([]clientv3.Cmp, []clientv3.Op, error) {
			c := r.ctr.counter
			if len(batch) > 0 && c.Epoch == epoch && c.Seq == batch[len(batch)-1].Seq {
				// Already there: an earlier attempt landed, its answer lost.
				return nil, nil, nil
			}
			var cmps []clientv3.Cmp
			if c.Epoch != epoch {
				if c.Seq != 0 {
					return nil, nil, fmt.Errorf("journal import: the store's journal is epoch %d with %d entries, not epoch %d", c.Epoch, c.Seq, epoch)
				}
				resp, err := s.cli.Get(r.ctx, s.prefix+"rec/", clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly(), clientv3.WithRev(r.rev))
				if err != nil {
					return nil, nil, r.fail(err)
				}
				if len(resp.Kvs) > 0 {
					return nil, nil, fmt.Errorf("journal import: the store holds records (%s) but no journal: import into an empty store", resp.Kvs[0].Key)
				}
				// Still none when the import lands.
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.prefix+"rec/"), "=", 0).WithPrefix())
				c = counter{SchemaVersion: state.SchemaVersion, Epoch: epoch, CreatedAt: s.now().UTC()}
			}
			if err := state.CheckImport(epoch, c.Seq+1, batch); err != nil {
				return nil, nil, err
			}
			if len(batch) == 0 && len(cmps) == 0 {
				return nil, nil, nil // the epoch is already this one
			}
			var ops []clientv3.Op
			for _, e := range batch {
				ops = append(ops, clientv3.OpPut(s.journalKey(e.Epoch, e.Seq), string(encode(storedEntry{Entry: e}))))
			}
			c.Seq = batch[len(batch)-1].Seq
			return cmps, append(ops, clientv3.OpPut(s.counterKey(), string(encode(c)))), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
