package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Journal event types written by the store itself for claim changes, so
// the journal shows who held what (and who took over from whom).
const (
	EventClaimAcquired = "claim.acquired"
	EventClaimReleased = "claim.released"
)

// live: unexpired and not provably dead.
func live(c *Claim, now time.Time) bool {
	return now.Before(c.ExpiresAt) && !provablyGone(c.Holder, self())
}

type claimDetail struct {
	ClaimID  string `json:"claim_id"`
	PID      int    `json:"pid"`
	Replaced string `json:"replaced,omitempty"` // the dead or expired claim taken over
}

// ClaimEvent is the journal event of a claim change; replaced names the
// expired (or dead) claim a takeover replaced.
func ClaimEvent(typ string, c Claim, replaced string) Event {
	d, _ := json.Marshal(claimDetail{ClaimID: c.ID, PID: c.Holder.PID, Replaced: replaced})
	return Event{Type: typ, Detail: d}
}

// NewClaimID is a fresh random claim ID.
func NewClaimID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AcquireClaim takes the claim on an existing record; see Store.AcquireClaim.
func (s *FileStore) AcquireClaim(ctx context.Context, kind Kind, name string, ttl time.Duration) (Claim, error) {
	if err := ValidateKey(kind, name); err != nil {
		return Claim{}, err
	}
	if ttl <= 0 {
		return Claim{}, fmt.Errorf("claim on %s %q: ttl must be positive, got %s", kind, name, ttl)
	}
	var out Claim
	err := s.update(ctx, func(t *tx) error {
		rf, err := s.readRecord(kind, name)
		if err != nil {
			return err
		}
		var replaced string
		if old := rf.Claim; old != nil {
			if live(old, t.now) {
				return &ClaimedError{Kind: kind, Name: name, Holder: old.Holder}
			}
			replaced = old.ID
		}
		c := Claim{ID: NewClaimID(), Kind: kind, Name: name, Holder: SelfAt(t.now), ExpiresAt: t.now.Add(ttl), TTL: ttl}
		rf.Claim = &c
		if err := s.writeRecord(rf); err != nil {
			return err
		}
		out = c
		return t.record(kind, name, ClaimEvent(EventClaimAcquired, c, replaced), rf.Revision)
	})
	return out, err
}

// currentClaim returns the record and its claim if c is still that claim.
func (s *FileStore) currentClaim(c Claim) (*recordFile, error) {
	if err := ValidateKey(c.Kind, c.Name); err != nil {
		return nil, err
	}
	stale := func(reason string) error { return &StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: reason} }
	rf, err := s.readRecord(c.Kind, c.Name)
	if errors.Is(err, ErrNotFound) {
		return nil, stale("the record was deleted")
	}
	if err != nil {
		return nil, err
	}
	if rf.Claim == nil || rf.Claim.ID != c.ID {
		return nil, stale(fmt.Sprintf("claim %s was released or taken over", c.ID))
	}
	return rf, nil
}

// Checkpoint writes data under a claim; see Store.Checkpoint. An expired
// claim is refused even if nobody has taken it over yet: once expired,
// another process was entitled to act on the record. A successful
// checkpoint renews the lease for the claim's original ttl.
func (s *FileStore) Checkpoint(ctx context.Context, c Claim, seq uint64, expected uint64, data json.RawMessage, ev Event) (Claim, Record, error) {
	data, ev, err := CheckWrite(c.Kind, c.Name, data, ev)
	if err != nil {
		return Claim{}, Record{}, err
	}
	var outC Claim
	var outR Record
	err = s.update(ctx, func(t *tx) error {
		rf, err := s.currentClaim(c)
		if err != nil {
			return err
		}
		cur := rf.Claim
		if err := unexpired(*cur, t.now); err != nil {
			return err
		}
		if seq != cur.Seq+1 {
			return &StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: fmt.Sprintf("checkpoint sequence %d, expected %d", seq, cur.Seq+1)}
		}
		if rf.Revision != expected {
			return &ConflictError{Kind: c.Kind, Name: c.Name, Expected: expected, Actual: rf.Revision}
		}
		rf.Revision++
		rf.SchemaVersion = SchemaVersion
		rf.UpdatedAt = t.now
		rf.Data = data
		cur.Seq = seq
		cur.ExpiresAt = t.now.Add(cur.TTL)
		if err := s.writeRecord(rf); err != nil {
			return err
		}
		outC, outR = *cur, rf.Record
		return t.record(c.Kind, c.Name, ev, rf.Revision)
	})
	return outC, outR, err
}

// unexpired refuses a claim past its expiry: once expired, another
// process was entitled to act on the record, whether or not one did.
func unexpired(c Claim, now time.Time) error {
	if now.Before(c.ExpiresAt) {
		return nil
	}
	return &StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: "claim expired at " + c.ExpiresAt.Format(time.RFC3339Nano)}
}

// RenewClaim extends a current, unexpired claim by its TTL; see
// Store.RenewClaim. The record file is rewritten with the new expiry
// only: its revision and the journal stay as they are.
func (s *FileStore) RenewClaim(ctx context.Context, c Claim) (Claim, error) {
	var out Claim
	err := s.update(ctx, func(t *tx) error {
		rf, err := s.currentClaim(c)
		if err != nil {
			return err
		}
		cur := rf.Claim
		if err := unexpired(*cur, t.now); err != nil {
			return err
		}
		cur.ExpiresAt = t.now.Add(cur.TTL)
		if err := s.writeRecord(rf); err != nil {
			return err
		}
		out = *cur
		return nil
	})
	return out, err
}

// ReleaseClaim gives the claim up; see Store.ReleaseClaim.
func (s *FileStore) ReleaseClaim(ctx context.Context, c Claim) error {
	return s.update(ctx, func(t *tx) error {
		rf, err := s.currentClaim(c)
		if err != nil {
			return err
		}
		released := *rf.Claim
		rf.Claim = nil
		if err := s.writeRecord(rf); err != nil {
			return err
		}
		return t.record(c.Kind, c.Name, ClaimEvent(EventClaimReleased, released, ""), rf.Revision)
	})
}

// ClaimHolder returns the live claim on a record; see Store.ClaimHolder.
func (s *FileStore) ClaimHolder(ctx context.Context, kind Kind, name string) (*Claim, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if err := ValidateKey(kind, name); err != nil {
		return nil, err
	}
	rf, err := s.readRecord(kind, name)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if c := rf.Claim; c != nil && live(c, s.now()) {
		held := *c
		return &held, nil
	}
	return nil, nil
}
