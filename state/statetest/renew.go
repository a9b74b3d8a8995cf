package statetest

import (
	"context"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// testRenewClaim: a renewal extends the claim by its TTL and changes
// nothing else; a replaced, released or expired claim cannot be renewed.
func testRenewClaim(t *testing.T, s suite) {
	ctx := context.Background()
	r := create(t, s, "a", data(`{}`))
	c := acquire(t, s, "a", time.Minute)
	n := len(journal(t, s, 0))
	s.clock.Advance(40 * time.Second)
	renewed, err := s.RenewClaim(ctx, c)
	if err != nil {
		t.Fatalf("RenewClaim: %v", err)
	}
	if renewed.ID != c.ID || renewed.Seq != 0 || renewed.TTL != time.Minute || !renewed.ExpiresAt.After(c.ExpiresAt.Add(30*time.Second)) {
		t.Fatalf("renewed claim %+v, acquired %+v", renewed, c)
	}
	sameRecord(t, "after RenewClaim", get(t, s, "a"), r)
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("RenewClaim journaled: %d entries, want %d", got, n)
	}
	// Past the first expiry, the renewed claim still holds.
	s.clock.Advance(40 * time.Second)
	_, err = s.AcquireClaim(ctx, kind, "a", time.Minute)
	wantErr[*state.ClaimedError](t, "AcquireClaim before the renewed expiry", err)
	c, r, err = s.Checkpoint(ctx, c, 1, r.Revision, data(`{"v":1}`), ev("widget.phase"))
	if err != nil {
		t.Fatalf("Checkpoint after RenewClaim: %v", err)
	}

	stolen := c
	stolen.ID = "not-the-claim"
	_, err = s.RenewClaim(ctx, stolen)
	wantErr[*state.StaleClaimError](t, "RenewClaim of another claim", err)

	s.clock.Advance(2 * time.Minute)
	_, err = s.RenewClaim(ctx, c)
	wantErr[*state.StaleClaimError](t, "RenewClaim of an expired claim", err)
	if err := s.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
	_, err = s.RenewClaim(ctx, c)
	wantErr[*state.StaleClaimError](t, "RenewClaim of a released claim", err)
	sameRecord(t, "after refused renewals", get(t, s, "a"), r)
}

// testKeepClaimRenews: a kept claim outlives its TTL several times over,
// and stays usable for checkpoints; Stop ends the renewals, not the claim.
func testKeepClaimRenews(t *testing.T, s suite) {
	const ttl = time.Second
	ctx := context.Background()
	r := create(t, s, "a", data(`{}`))
	c := acquire(t, s, "a", ttl)
	k := state.KeepClaim(ctx, s, c)
	outlived := time.NewTimer(time.Until(c.ExpiresAt.Add(2 * ttl)))
	select {
	case <-k.Lost():
		t.Fatalf("kept claim lost: %v", k.Err())
	case <-outlived.C:
	}
	if k.Claim().ExpiresAt.Before(c.ExpiresAt.Add(ttl)) {
		t.Fatalf("keeper's claim expires %s, acquired one %s: not renewed", k.Claim().ExpiresAt, c.ExpiresAt)
	}
	c, _, err := s.Checkpoint(ctx, c, 1, r.Revision, data(`{"v":1}`), ev("widget.phase"))
	if err != nil {
		t.Fatalf("Checkpoint %s past the acquired expiry: %v", 2*ttl, err)
	}
	k.Stop()
	select {
	case <-k.Lost():
		t.Fatalf("Stop reported a loss: %v", k.Err())
	default:
	}
	if err := s.ReleaseClaim(ctx, c); err != nil {
		t.Fatalf("ReleaseClaim after Stop: %v", err)
	}
}

// testKeepClaimLost: when the claim expires and is taken over, the keeper
// reports the loss with a *StaleClaimError.
func testKeepClaimLost(t *testing.T, s suite) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create(t, s, "a", data(`{}`))
	c := acquire(t, s, "a", 1500*time.Millisecond)
	k := state.KeepClaim(ctx, s, c)
	defer k.Stop()
	s.clock.Advance(time.Hour)
	taker := acquire(t, s, "a", time.Minute)
	select {
	case <-k.Lost():
	case <-ctx.Done():
		t.Fatal("the keeper did not notice its claim was taken over")
	}
	wantErr[*state.StaleClaimError](t, "keeper's loss", k.Err())
	if _, _, err := s.Checkpoint(ctx, taker, 1, 1, data(`{"v":1}`), ev("widget.phase")); err != nil {
		t.Fatalf("the taker's checkpoint: %v", err)
	}
}
