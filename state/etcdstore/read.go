package etcdstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

// pageSize bounds one range response; lists are read in pages pinned to
// one revision, so a long list is still one consistent view.
const pageSize = 500

// counter is the value of P/jctl.
type counter struct {
	SchemaVersion int       `json:"schema_version"`
	Epoch         uint64    `json:"epoch"`
	Seq           uint64    `json:"seq"`
	CreatedAt     time.Time `json:"created_at"`
}

// counterRead is the counter as a read found it: ModRevision 0 when the
// key is missing.
type counterRead struct {
	counter
	modRev int64
	raw    []byte
}

func (s *Store) decodeCounter(kv *mvccpb.KeyValue) (counterRead, error) {
	if kv == nil {
		return counterRead{}, nil
	}
	c := counterRead{modRev: kv.ModRevision, raw: kv.Value}
	if err := json.Unmarshal(kv.Value, &c.counter); err != nil || c.Epoch == 0 || c.SchemaVersion < 1 {
		return c, fmt.Errorf("state store %s: journal counter %s is unreadable (%q); restore it from a backup of the cluster",
			s.name, s.counterKey(), kv.Value)
	}
	if c.SchemaVersion > state.SchemaVersion {
		return c, &state.SchemaError{Path: s.name, Found: c.SchemaVersion}
	}
	return c, nil
}

// reader reads for one attempt of a call: every read at the revision of
// the first, which also reads the journal counter, so a commit comparing
// the counter lands only if nothing was written since.
type reader struct {
	*call
	ctx context.Context // this attempt's
	rev int64
	ctr counterRead
}

// get reads keys at the reader's revision; missing keys map to nil.
func (r *reader) get(keys ...string) (map[string]*mvccpb.KeyValue, error) {
	var ops []clientv3.Op
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(k, clientv3.WithRev(r.rev)))
	}
	first := r.rev == 0
	if first {
		ops = append(ops, clientv3.OpGet(r.s.counterKey()))
	}
	resp, err := r.s.cli.Txn(r.ctx).Then(ops...).Commit()
	if err != nil {
		return nil, r.fail(err)
	}
	out := map[string]*mvccpb.KeyValue{}
	for i, op := range resp.Responses {
		kvs := op.GetResponseRange().GetKvs()
		var kv *mvccpb.KeyValue
		if len(kvs) > 0 {
			kv = kvs[0]
		}
		if first && i == len(keys) {
			if r.ctr, err = r.s.decodeCounter(kv); err != nil {
				return nil, err
			}
			continue
		}
		out[keys[i]] = kv
	}
	if first {
		r.rev = resp.Header.Revision
	}
	return out, nil
}

// list reads every key under prefix at the reader's revision, in key
// order.
func (r *reader) list(prefix string) ([]*mvccpb.KeyValue, error) {
	if r.rev == 0 {
		if _, err := r.get(); err != nil {
			return nil, err
		}
	}
	kvs, err := r.s.rangeAll(r.ctx, prefix, r.rev)
	if err != nil {
		return nil, r.fail(err)
	}
	return kvs, nil
}

func (r *reader) fail(err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) {
		return errStale
	}
	return r.call.fail(err)
}

// errStale: a read at the attempt's revision found it compacted away, so
// the attempt starts over on fresh reads.
var errStale = errors.New("read revision compacted")

// readAll is a call reading every key under prefix.
func (s *Store) readAll(ctx context.Context, op, prefix string) ([]*mvccpb.KeyValue, error) {
	c, err := s.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer c.end()
	var kvs []*mvccpb.KeyValue
	err = c.retry(func(actx context.Context) (err error) {
		kvs, err = s.rangeAll(actx, prefix, 0)
		return err
	})
	return kvs, err
}

// rangeAll reads every key under prefix at rev (0: now), page by page.
func (s *Store) rangeAll(ctx context.Context, prefix string, rev int64) ([]*mvccpb.KeyValue, error) {
	return s.rangeFrom(ctx, prefix, clientv3.GetPrefixRangeEnd(prefix), rev)
}

// rangeFrom reads the keys in [from, end) at rev (0: now), page by page,
// every page at the first one's revision.
func (s *Store) rangeFrom(ctx context.Context, from, end string, rev int64) ([]*mvccpb.KeyValue, error) {
	var out []*mvccpb.KeyValue
	for {
		resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(pageSize), clientv3.WithRev(rev))
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Kvs...)
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		rev = resp.Header.Revision
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// counter reads the journal counter, creating it (a new epoch) when the
// prefix has none.
func (s *Store) counter(ctx context.Context) (counterRead, error) {
	c, err := s.begin(ctx, "read the journal counter")
	if err != nil {
		return counterRead{}, err
	}
	defer c.end()
	for {
		var kv *mvccpb.KeyValue
		err := c.retry(func(actx context.Context) error {
			resp, err := s.cli.Get(actx, s.counterKey())
			if err == nil && len(resp.Kvs) > 0 {
				kv = resp.Kvs[0]
			}
			return err
		})
		if err != nil {
			return counterRead{}, err
		}
		if kv != nil {
			return s.decodeCounter(kv)
		}
		// Creating it is idempotent: whichever counter won is read back.
		first := counter{SchemaVersion: state.SchemaVersion, Epoch: state.NewEpoch(), CreatedAt: s.now().UTC()}
		err = c.retry(func(actx context.Context) error {
			_, err := s.cli.Txn(actx).If(clientv3.Compare(clientv3.CreateRevision(s.counterKey()), "=", 0)).
				Then(clientv3.OpPut(s.counterKey(), string(encode(first)))).Commit()
			return err
		})
		if err != nil {
			return counterRead{}, err
		}
	}
}

// encode is JSON without HTML escaping and without the trailing newline.
func encode(v any) []byte {
	b, err := state.EncodeJSON(v)
	if err != nil {
		panic(err) // only our own types, all encodable
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}

// decodeRecord reads a record's value, checking it is the record its key
// names.
func (s *Store) decodeRecord(kind state.Kind, name string, kv *mvccpb.KeyValue) (state.Record, error) {
	var r state.Record
	err := json.Unmarshal(kv.Value, &r)
	reason := ""
	switch {
	case err != nil:
		reason = "not a record: " + err.Error()
	case r.Kind != kind || r.Name != name:
		reason = fmt.Sprintf("it holds %s %q", r.Kind, r.Name)
		if r.Kind == "" && r.Name == "" {
			reason = "it names no record"
		}
	case r.Revision == 0:
		reason = "it has no revision"
	default:
		return r, nil
	}
	key := s.recKey(kind, name)
	return r, &state.CorruptRecordError{Kind: kind, Name: name, Where: s.Locate(kind, name), Reason: reason,
		Aside: fmt.Sprintf("etcdctl get %s --print-value-only > %s.bad && etcdctl del %[1]s", key, name)}
}

// Get returns the record, or *state.NotFoundError.
func (s *Store) Get(ctx context.Context, kind state.Kind, name string) (state.Record, error) {
	if err := state.ValidateKey(kind, name); err != nil {
		return state.Record{}, err
	}
	c, err := s.begin(ctx, fmt.Sprintf("get %s %s", kind, name))
	if err != nil {
		return state.Record{}, err
	}
	defer c.end()
	var kvs []*mvccpb.KeyValue
	err = c.retry(func(actx context.Context) error {
		resp, err := s.cli.Get(actx, s.recKey(kind, name))
		if err == nil {
			kvs = resp.Kvs
		}
		return err
	})
	if err != nil {
		return state.Record{}, err
	}
	if len(kvs) == 0 {
		return state.Record{}, &state.NotFoundError{Kind: kind, Name: name}
	}
	return s.decodeRecord(kind, name, kvs[0])
}

// List returns the records of kind sorted by name, [] when none.
func (s *Store) List(ctx context.Context, kind state.Kind) ([]state.Record, error) {
	if err := state.ValidateKind(kind); err != nil {
		return nil, err
	}
	kvs, err := s.readAll(ctx, "list "+string(kind), s.recPrefix(kind))
	if err != nil {
		return nil, err
	}
	return s.decodeList(kind, kvs)
}

func (s *Store) decodeList(kind state.Kind, kvs []*mvccpb.KeyValue) ([]state.Record, error) {
	recs := make([]state.Record, 0, len(kvs))
	p := s.recPrefix(kind)
	for _, kv := range kvs {
		name := strings.TrimPrefix(string(kv.Key), p)
		if state.ValidateKey(kind, name) != nil {
			continue // not a key this store writes
		}
		r, err := s.decodeRecord(kind, name, kv)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func jsonInto(b []byte, v any) bool { return json.Unmarshal(b, v) == nil }
