package records

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kdlbs/kandev-exec/internal/crashpoint"
	"github.com/kdlbs/kandev-exec/state"
)

// Held is a claim this process holds on a record (docs/architecture.md,
// "Claims"): while it is held nobody else writes the record, and every
// write of it goes through Checkpoint, fenced by the claim's id and
// sequence, so a holder that lost its claim (it expired, or a process
// that found it dead took over) changes nothing any more.
type Held struct {
	st state.Store
	c  state.Claim
}

// Acquire takes the claim on an existing record for ttl; another live
// holder makes it a *state.ClaimedError naming that holder.
func Acquire(ctx context.Context, st state.Store, kind state.Kind, name string, ttl time.Duration) (*Held, error) {
	c, err := st.AcquireClaim(ctx, kind, name, ttl)
	if err != nil {
		return nil, err
	}
	return &Held{st: st, c: c}, nil
}

// CreateClaimed stores a new record of v already claimed, in one
// transaction with check (nil: none), so no other process sees it
// unclaimed before its creator's first checkpoint, and what check
// verified (the records it points at) still holds when it lands. Its
// first state is held to its type's, as by Create.
func CreateClaimed(ctx context.Context, st state.Store, kind state.Kind, name, event string, v any, ttl time.Duration, check func(state.Tx) error) (*Held, error) {
	if err := checkFirst(v); err != nil {
		return nil, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var c state.Claim
	err = st.Txn(ctx, func(tx state.Tx) error {
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		c, _, err = tx.CreateClaimed(kind, name, data, EventFor(event, v), ttl)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Held{st: st, c: c}, nil
}

// ID is the claim's id (what a drain receipt is keyed by).
func (h *Held) ID() string { return h.c.ID }

// Claim is the claim as last checkpointed.
func (h *Held) Claim() state.Claim { return h.c }

// Checkpoint applies change to the claimed record and writes it under
// the claim, holding it to the transition table like Mutate; each
// checkpoint renews the claim's lease. A lost claim is a
// *state.StaleClaimError and writes nothing.
func Checkpoint[T any](ctx context.Context, h *Held, event string, change func(*T) error) (*T, error) {
	v, rec, err := Get[T](ctx, h.st, h.c.Kind, h.c.Name)
	if err != nil {
		return nil, err
	}
	data, err := apply(h.st, rec, v, change)
	if err != nil {
		return nil, err
	}
	c, _, err := h.st.Checkpoint(ctx, h.c, h.c.Seq+1, rec.Revision, data, EventFor(event, v))
	if err != nil {
		return nil, err
	}
	h.c = c
	crashpoint.Hit(event)
	return v, nil
}

// Release gives the claim up. Releasing a claim already lost is not an
// error for the caller to act on: the successor holds it.
func (h *Held) Release(ctx context.Context) error {
	return h.st.ReleaseClaim(context.WithoutCancel(ctx), h.c)
}
