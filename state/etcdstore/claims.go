package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

// storedClaim is a claim as kept at P/claim/<kind>/<name>, attached to
// its etcd lease: when the holder stops renewing, etcd deletes the key.
//
// A claim is live while its key exists and its ExpiresAt, by the
// reader's clock, has not passed: ExpiresAt honours TTLs shorter than the
// lease's whole seconds (and its floor), and compares the clocks of the
// machines involved, so keep their skew well below the TTLs used. Nothing
// else proves a holder dead: a pid means nothing on another machine or in
// another pid namespace.
type storedClaim struct {
	state.Claim
	Lease clientv3.LeaseID `json:"lease"`
}

func (c *storedClaim) live(now time.Time) bool { return now.Before(c.ExpiresAt) }

func (s *Store) decodeClaim(kind state.Kind, name string, kv *mvccpb.KeyValue) (*storedClaim, error) {
	if kv == nil {
		return nil, nil
	}
	var c storedClaim
	if err := json.Unmarshal(kv.Value, &c); err != nil || c.ID == "" || c.Kind != kind || c.Name != name {
		key := s.claimKey(kind, name)
		return nil, fmt.Errorf("state store %s: the claim on %s %q (key %s) is unreadable; if no kandev-exec is working on it, remove it (etcdctl del %s)",
			s.name, kind, name, key, key)
	}
	return &c, nil
}

// leaseTTL is ttl in the whole seconds etcd leases count (the server may
// raise it to its floor).
func leaseTTL(ttl time.Duration) int64 { return max(int64(math.Ceil(ttl.Seconds())), 1) }

// AcquireClaim takes the claim on an existing record; see state.Store.
// The claim's key is put on a new lease of the TTL, in the same
// transaction as its journal entry.
func (s *Store) AcquireClaim(ctx context.Context, kind state.Kind, name string, ttl time.Duration) (state.Claim, error) {
	if err := state.ValidateKey(kind, name); err != nil {
		return state.Claim{}, err
	}
	if ttl <= 0 {
		return state.Claim{}, fmt.Errorf("claim on %s %q: ttl must be positive, got %s", kind, name, ttl)
	}
	op := fmt.Sprintf("claim %s %s", kind, name)
	lease, err := s.grant(ctx, op, ttl)
	if err != nil {
		return state.Claim{}, err
	}
	var out state.Claim
	var replaced clientv3.LeaseID
	rk, ck := s.recKey(kind, name), s.claimKey(kind, name)
	err = s.mutate(ctx, op, func(r *reader) (*change, error) {
		kvs, err := r.get(rk, ck)
		if err != nil {
			return nil, err
		}
		if kvs[rk] == nil {
			return nil, &state.NotFoundError{Kind: kind, Name: name}
		}
		rec, err := s.decodeRecord(kind, name, kvs[rk])
		if err != nil {
			return nil, err
		}
		old, err := s.decodeClaim(kind, name, kvs[ck])
		if err != nil {
			return nil, err
		}
		now := s.now().UTC()
		var replacedID string
		replaced = 0
		if old != nil {
			if old.live(now) {
				return nil, &state.ClaimedError{Kind: kind, Name: name, Holder: old.Holder}
			}
			replacedID, replaced = old.ID, old.Lease
		}
		out = state.Claim{ID: state.NewClaimID(), Kind: kind, Name: name, Holder: state.SelfAt(now), ExpiresAt: now.Add(ttl), TTL: ttl}
		stored := &storedClaim{Claim: out, Lease: lease}
		e := entryOf(kind, name, state.ClaimEvent(state.EventClaimAcquired, out, replacedID), rec.Revision)
		e.At = now
		return &change{cmps: []clientv3.Cmp{unchanged(rk, kvs[rk]), unchanged(ck, kvs[ck])},
			ops:   []clientv3.Op{clientv3.OpPut(ck, string(encode(stored)), clientv3.WithLease(lease))},
			entry: e, claim: stored}, nil
	})
	if err != nil {
		s.revoke(ctx, lease, err)
		return state.Claim{}, err
	}
	if replaced != 0 {
		s.revoke(ctx, replaced, nil) // the expired holder's: its key is ours now
	}
	return out, nil
}

// grant makes the lease for a new claim. A retried grant may leave an
// unused lease behind, which expires by itself.
func (s *Store) grant(ctx context.Context, op string, ttl time.Duration) (clientv3.LeaseID, error) {
	c, err := s.begin(ctx, op)
	if err != nil {
		return 0, err
	}
	defer c.end()
	var id clientv3.LeaseID
	err = c.retry(func(actx context.Context) error {
		resp, err := s.cli.Grant(actx, leaseTTL(ttl))
		if err == nil {
			id = resp.ID
		}
		return err
	})
	return id, err
}

// revoke drops a lease nobody holds any more. It is tidiness (unrenewed,
// the lease expires anyway), so it is skipped when the store could not be
// reached, and its own failure is ignored.
func (s *Store) revoke(ctx context.Context, id clientv3.LeaseID, cause error) {
	var unreachable *state.UnreachableError
	if errors.As(cause, &unreachable) {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout/4)
	defer cancel()
	s.cli.Revoke(rctx, id)
}

// currentClaim reads c's record and claim and checks c is still the
// claim.
func (s *Store) currentClaim(r *reader, c state.Claim) (*storedClaim, state.Record, map[string]*mvccpb.KeyValue, error) {
	if err := state.ValidateKey(c.Kind, c.Name); err != nil {
		return nil, state.Record{}, nil, err
	}
	stale := func(reason string) error { return &state.StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: reason} }
	rk, ck := s.recKey(c.Kind, c.Name), s.claimKey(c.Kind, c.Name)
	kvs, err := r.get(rk, ck)
	if err != nil {
		return nil, state.Record{}, nil, err
	}
	if kvs[rk] == nil {
		return nil, state.Record{}, nil, stale("the record was deleted")
	}
	rec, err := s.decodeRecord(c.Kind, c.Name, kvs[rk])
	if err != nil {
		return nil, state.Record{}, nil, err
	}
	cur, err := s.decodeClaim(c.Kind, c.Name, kvs[ck])
	if err != nil {
		return nil, state.Record{}, nil, err
	}
	if cur == nil || cur.ID != c.ID {
		return nil, state.Record{}, nil, stale(fmt.Sprintf("claim %s was released, taken over or its lease expired", c.ID))
	}
	return cur, rec, kvs, nil
}

func unexpired(c state.Claim, now time.Time) error {
	if now.Before(c.ExpiresAt) {
		return nil
	}
	return &state.StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: "claim expired at " + c.ExpiresAt.Format(time.RFC3339Nano)}
}

// keepAlive renews the claim's lease for its TTL.
func (s *Store) keepAlive(r *reader, c *storedClaim) error {
	_, err := s.cli.KeepAliveOnce(r.ctx, c.Lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return &state.StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: "its lease expired"}
	}
	if err != nil {
		return r.fail(err)
	}
	return nil
}

// Checkpoint writes data under a claim; see state.Store. It renews the
// lease, then puts the record and the claim's new sequence in one
// transaction comparing both keys and the journal counter.
func (s *Store) Checkpoint(ctx context.Context, c state.Claim, seq uint64, expected uint64, data json.RawMessage, ev state.Event) (state.Claim, state.Record, error) {
	data, ev, err := state.CheckWrite(c.Kind, c.Name, data, ev)
	if err != nil {
		return state.Claim{}, state.Record{}, err
	}
	var outC state.Claim
	var outR state.Record
	err = s.mutate(ctx, fmt.Sprintf("checkpoint %s %s", c.Kind, c.Name), func(r *reader) (*change, error) {
		cur, rec, kvs, err := s.currentClaim(r, c)
		if err != nil {
			return nil, err
		}
		now := s.now().UTC()
		if err := unexpired(cur.Claim, now); err != nil {
			return nil, err
		}
		if seq != cur.Seq+1 {
			return nil, &state.StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: fmt.Sprintf("checkpoint sequence %d, expected %d", seq, cur.Seq+1)}
		}
		if rec.Revision != expected {
			return nil, &state.ConflictError{Kind: c.Kind, Name: c.Name, Expected: expected, Actual: rec.Revision}
		}
		if err := s.keepAlive(r, cur); err != nil {
			return nil, err
		}
		rec.Revision++
		rec.SchemaVersion = state.SchemaVersion
		rec.UpdatedAt = now
		rec.Data = data
		cur.Seq = seq
		cur.ExpiresAt = now.Add(cur.TTL)
		outC, outR = cur.Claim, rec
		rk, ck := s.recKey(c.Kind, c.Name), s.claimKey(c.Kind, c.Name)
		e := entryOf(c.Kind, c.Name, ev, rec.Revision)
		e.At = now
		return &change{cmps: []clientv3.Cmp{unchanged(rk, kvs[rk]), unchanged(ck, kvs[ck])},
			ops: []clientv3.Op{clientv3.OpPut(rk, string(encode(rec))),
				clientv3.OpPut(ck, string(encode(cur)), clientv3.WithLease(cur.Lease))},
			entry: e, claim: cur}, nil
	})
	if err != nil {
		return state.Claim{}, state.Record{}, err
	}
	return outC, outR, nil
}

// RenewClaim renews the lease and extends the claim's expiry by its TTL,
// without a journal entry; see state.Store.
func (s *Store) RenewClaim(ctx context.Context, c state.Claim) (state.Claim, error) {
	var out state.Claim
	err := s.mutate(ctx, fmt.Sprintf("renew the claim on %s %s", c.Kind, c.Name), func(r *reader) (*change, error) {
		cur, _, kvs, err := s.currentClaim(r, c)
		if err != nil {
			return nil, err
		}
		if err := unexpired(cur.Claim, s.now()); err != nil {
			return nil, err
		}
		if err := s.keepAlive(r, cur); err != nil {
			return nil, err
		}
		cur.ExpiresAt = s.now().UTC().Add(cur.TTL)
		out = cur.Claim
		ck := s.claimKey(c.Kind, c.Name)
		// A checkpoint that changed the claim meanwhile fails the compare:
		// the renewal is planned again on the new claim.
		return &change{cmps: []clientv3.Cmp{unchanged(ck, kvs[ck])},
			ops: []clientv3.Op{clientv3.OpPut(ck, string(encode(cur)), clientv3.WithLease(cur.Lease))}, claim: cur}, nil
	})
	if err != nil {
		return state.Claim{}, err
	}
	return out, nil
}

// ReleaseClaim deletes the claim's key and revokes its lease; see
// state.Store.
func (s *Store) ReleaseClaim(ctx context.Context, c state.Claim) error {
	var lease clientv3.LeaseID
	err := s.mutate(ctx, fmt.Sprintf("release the claim on %s %s", c.Kind, c.Name), func(r *reader) (*change, error) {
		cur, rec, kvs, err := s.currentClaim(r, c)
		if err != nil {
			return nil, err
		}
		lease = cur.Lease
		ck := s.claimKey(c.Kind, c.Name)
		return &change{cmps: []clientv3.Cmp{unchanged(ck, kvs[ck])}, ops: []clientv3.Op{clientv3.OpDelete(ck)},
			entry: entryOf(c.Kind, c.Name, state.ClaimEvent(state.EventClaimReleased, cur.Claim, ""), rec.Revision)}, nil
	})
	if err == nil {
		s.revoke(ctx, lease, nil)
	}
	return err
}

// LiveClaims lists the claims whose keys exist and have not expired.
func (s *Store) LiveClaims(ctx context.Context) ([]state.Claim, error) {
	kvs, err := s.readAll(ctx, "list claims", s.prefix+"claim/")
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := []state.Claim{}
	for _, kv := range kvs {
		kind, name, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), s.prefix+"claim/"), "/")
		c, err := s.decodeClaim(state.Kind(kind), name, kv)
		if err != nil {
			return nil, err
		}
		if c.live(now) {
			out = append(out, c.Claim)
		}
	}
	return out, nil
}

// ClaimHolder returns the live claim on a record; see state.Store. The
// claim's key outlives its holder only until the lease expires.
func (s *Store) ClaimHolder(ctx context.Context, kind state.Kind, name string) (*state.Claim, error) {
	if err := state.ValidateKey(kind, name); err != nil {
		return nil, err
	}
	c, err := s.begin(ctx, fmt.Sprintf("claim holder %s %s", kind, name))
	if err != nil {
		return nil, err
	}
	defer c.end()
	var kvs []*mvccpb.KeyValue
	err = c.retry(func(actx context.Context) error {
		resp, err := s.cli.Get(actx, s.claimKey(kind, name))
		if err == nil {
			kvs = resp.Kvs
		}
		return err
	})
	if err != nil || len(kvs) == 0 {
		return nil, err
	}
	held, err := s.decodeClaim(kind, name, kvs[0])
	if err != nil || !held.live(s.now().UTC()) {
		return nil, err
	}
	return &held.Claim, nil
}
