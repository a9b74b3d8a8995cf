package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Keeper keeps a claim alive while a long operation (archive, drain,
// sweep) works, and says when it is lost. See KeepClaim.
type Keeper struct {
	lost chan struct{}
	done chan struct{}
	stop context.CancelFunc

	mu    sync.Mutex
	claim Claim
	err   error
}

// KeepClaim renews c through s.RenewClaim every third of its TTL until
// Stop is called or ctx ends. Call it right after acquiring c (or after a
// checkpoint): the TTL is counted from then.
//
// Lost is closed when the claim is lost: a renewal was refused (released,
// taken over, expired), or none succeeded before the TTL ran out since the
// last one was sent, so the claim may have expired. A server-side lease
// runs from when the renewal arrives, so this local count errs on the
// early side. After a loss the holder must stop without further side
// effects; Err says why.
func KeepClaim(ctx context.Context, s Store, c Claim) *Keeper {
	ctx, stop := context.WithCancel(ctx)
	k := &Keeper{lost: make(chan struct{}), done: make(chan struct{}), stop: stop, claim: c}
	go k.run(ctx, s)
	return k
}

// Lost is closed when the claim is lost.
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

// Err is why the claim was lost; nil while it is held.
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Claim is the claim as last renewed.
func (k *Keeper) Claim() Claim {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.claim
}

// Stop ends the renewals and waits for the one in flight. The claim stays
// until it is released or expires.
func (k *Keeper) Stop() {
	k.stop()
	<-k.done
}

func (k *Keeper) run(ctx context.Context, s Store) {
	defer close(k.done)
	c := k.Claim()
	if c.TTL <= 0 {
		k.lose(fmt.Errorf("claim on %s %q has no TTL to renew", c.Kind, c.Name))
		return
	}
	every := max(c.TTL/3, time.Millisecond)
	deadline := time.Now().Add(c.TTL)
	wait := every
	var last error // why renewals fail, for the loss
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		sent := time.Now()
		// Never wait on a renewal past the point where the claim may be gone.
		rctx, cancel := context.WithDeadline(ctx, deadline)
		nc, err := s.RenewClaim(rctx, k.Claim())
		cutShort := rctx.Err() != nil
		cancel()
		var stale *StaleClaimError
		switch {
		case err == nil:
			k.mu.Lock()
			k.claim = nc
			k.mu.Unlock()
			deadline, wait, last = sent.Add(c.TTL), every, nil
		case ctx.Err() != nil:
			return
		case errors.As(err, &stale):
			k.lose(err)
			return
		default:
			if !cutShort || last == nil {
				last = err
			}
			if !time.Now().Before(deadline) {
				k.lose(fmt.Errorf("claim on %s %q lost: not renewed within its TTL (%s): %w", c.Kind, c.Name, c.TTL, last))
				return
			}
			// Try again before the claim can run out.
			wait = max(min(every, time.Until(deadline))/4, time.Millisecond)
		}
	}
}

func (k *Keeper) lose(err error) {
	k.mu.Lock()
	k.err = err
	k.mu.Unlock()
	close(k.lost)
}
