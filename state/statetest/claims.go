package statetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

func acquire(t *testing.T, s state.Store, name string, ttl time.Duration) state.Claim {
	t.Helper()
	c, err := s.AcquireClaim(context.Background(), kind, name, ttl)
	if err != nil {
		t.Fatalf("AcquireClaim %s: %v", name, err)
	}
	return c
}

func testClaimExclusive(t *testing.T, s suite) {
	ctx := context.Background()
	r := create(t, s, "a", data(`{}`))
	before := time.Now()
	c := acquire(t, s, "a", time.Minute)
	if c.ID == "" || c.Kind != kind || c.Name != "a" || c.Seq != 0 || c.Holder.PID != os.Getpid() ||
		c.ExpiresAt.Before(before.Add(59*time.Second)) || c.TTL != time.Minute {
		t.Fatalf("claim %+v", c)
	}
	if e := lastEntry(t, s); e.Type != state.EventClaimAcquired || e.Revision != 1 {
		t.Fatalf("journal after AcquireClaim: %+v", e)
	}
	_, err := s.AcquireClaim(ctx, kind, "a", time.Minute)
	if ce := wantErr[*state.ClaimedError](t, "second AcquireClaim", err); ce.Holder.PID != os.Getpid() {
		t.Fatalf("claimed error names %+v", ce.Holder)
	}
	_, err = s.Update(ctx, kind, "a", 1, data(`{"v":2}`), ev("widget.changed"))
	wantErr[*state.ClaimedError](t, "Update of a claimed record", err)
	wantErr[*state.ClaimedError](t, "Delete of a claimed record", s.Delete(ctx, kind, "a", 1, ev("widget.removed")))
	sameRecord(t, "after refused writes", get(t, s, "a"), r)

	if err := s.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, kind, "a", 1, data(`{"v":2}`), ev("widget.changed")); err != nil {
		t.Fatalf("Update after release: %v", err)
	}
	c2 := acquire(t, s, "a", time.Minute)
	if c2.ID == c.ID {
		t.Fatal("a new acquisition reused the claim id")
	}
}

func testCheckpointAdvances(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "a", data(`{"phase":"new"}`))
	c := acquire(t, s, "a", time.Minute)
	for i := uint64(1); i <= 3; i++ {
		var r state.Record
		var err error
		c, r, err = s.Checkpoint(ctx, c, i, i, data(`{"phase":"step%d"}`, i), ev("widget.phase"))
		if err != nil {
			t.Fatalf("Checkpoint %d: %v", i, err)
		}
		if c.Seq != i || r.Revision != i+1 || !sameJSON(r.Data, data(`{"phase":"step%d"}`, i)) {
			t.Fatalf("Checkpoint %d returned claim seq %d, record %+v", i, c.Seq, r)
		}
		sameRecord(t, "Get after Checkpoint", get(t, s, "a"), r)
		if e := lastEntry(t, s); e.Type != "widget.phase" || e.Revision != r.Revision {
			t.Fatalf("journal after Checkpoint: %+v", e)
		}
	}
}

func testCheckpointStaleSeq(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "a", data(`{}`))
	c := acquire(t, s, "a", time.Minute)
	c, r, err := s.Checkpoint(ctx, c, 1, 1, data(`{"v":1}`), ev("widget.phase"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(journal(t, s, 0))
	for _, seq := range []uint64{0, 1, 3} {
		_, _, err := s.Checkpoint(ctx, c, seq, r.Revision, data(`{"v":"stale"}`), ev("widget.phase"))
		wantErr[*state.StaleClaimError](t, "Checkpoint with a wrong seq", err)
	}
	sameRecord(t, "after stale checkpoints", get(t, s, "a"), r)
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("stale checkpoints journaled: %d entries, want %d", got, n)
	}
	if _, _, err := s.Checkpoint(ctx, c, 2, r.Revision, data(`{"v":2}`), ev("widget.phase")); err != nil {
		t.Fatalf("next seq after refusals: %v", err)
	}
}

func testCheckpointStaleRevision(t *testing.T, s suite) {
	ctx := context.Background()
	r := create(t, s, "a", data(`{}`))
	c := acquire(t, s, "a", time.Minute)
	_, _, err := s.Checkpoint(ctx, c, 1, r.Revision+1, data(`{"v":1}`), ev("widget.phase"))
	ce := wantErr[*state.ConflictError](t, "Checkpoint at a wrong revision", err)
	if ce.Expected != r.Revision+1 || ce.Actual != r.Revision {
		t.Fatalf("conflict %+v", ce)
	}
	sameRecord(t, "after refused checkpoint", get(t, s, "a"), r)
	// The refused checkpoint did not consume seq 1.
	if _, _, err := s.Checkpoint(ctx, c, 1, r.Revision, data(`{"v":1}`), ev("widget.phase")); err != nil {
		t.Fatalf("Checkpoint after a conflict: %v", err)
	}
}

// testCheckpointStaleClaimID: a previous holder's late write and late
// release change nothing and leave the current holder in place.
func testCheckpointStaleClaimID(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "a", data(`{}`))
	old := acquire(t, s, "a", time.Minute)
	if err := s.ReleaseClaim(ctx, old); err != nil {
		t.Fatal(err)
	}
	cur := acquire(t, s, "a", time.Minute)
	r := get(t, s, "a")
	n := len(journal(t, s, 0))
	_, _, err := s.Checkpoint(ctx, old, 1, r.Revision, data(`{"v":"late"}`), ev("widget.phase"))
	wantErr[*state.StaleClaimError](t, "Checkpoint with a replaced claim", err)
	wantErr[*state.StaleClaimError](t, "ReleaseClaim of a replaced claim", s.ReleaseClaim(ctx, old))
	sameRecord(t, "after stale writes", get(t, s, "a"), r)
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("stale claim journaled: %d entries, want %d", got, n)
	}
	_, err = s.AcquireClaim(ctx, kind, "a", time.Minute)
	wantErr[*state.ClaimedError](t, "AcquireClaim after a stale release", err)
	if _, _, err := s.Checkpoint(ctx, cur, 1, r.Revision, data(`{"v":1}`), ev("widget.phase")); err != nil {
		t.Fatalf("current holder's checkpoint: %v", err)
	}
}

// testExpiredClaim: expiry alone frees a claim, whoever holds it (here,
// this very process), and makes the holder's late writes stale.
func testExpiredClaim(t *testing.T, s suite) {
	ctx := context.Background()
	r := create(t, s, "a", data(`{}`))
	old := acquire(t, s, "a", 30*time.Millisecond)
	s.clock.Advance(60 * time.Millisecond)
	_, _, err := s.Checkpoint(ctx, old, 1, r.Revision, data(`{"v":"late"}`), ev("widget.phase"))
	wantErr[*state.StaleClaimError](t, "Checkpoint with an expired claim", err)
	sameRecord(t, "after expired checkpoint", get(t, s, "a"), r)

	cur := acquire(t, s, "a", time.Minute)
	if cur.ID == old.ID {
		t.Fatal("takeover reused the claim id")
	}
	_, _, err = s.Checkpoint(ctx, old, 1, r.Revision, data(`{"v":"late"}`), ev("widget.phase"))
	wantErr[*state.StaleClaimError](t, "Checkpoint with a taken-over claim", err)
	if _, _, err := s.Checkpoint(ctx, cur, 1, r.Revision, data(`{"v":1}`), ev("widget.phase")); err != nil {
		t.Fatal(err)
	}
}

func testConcurrentAcquire(t *testing.T, s suite) {
	create(t, s, "a", data(`{}`))
	const n = 8
	var wg sync.WaitGroup
	results := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := s.AcquireClaim(context.Background(), kind, "a", time.Minute)
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		if err == nil {
			won++
		} else {
			wantErr[*state.ClaimedError](t, "concurrent AcquireClaim", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent acquisitions won, want 1", won)
	}
}

// testRefusedWritesChangeNothing: every refusal leaves the records and the
// journal exactly as they were.
func testRefusedWritesChangeNothing(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "free", data(`{"v":0}`))
	create(t, s, "held", data(`{"v":0}`))
	c := acquire(t, s, "held", time.Minute)
	before, err := s.List(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}
	n := len(journal(t, s, 0))

	refusals := []func() error{
		func() error { _, err := s.Create(ctx, kind, "free", data(`{"v":1}`), ev("x")); return err },
		func() error { _, err := s.Update(ctx, kind, "free", 9, data(`{"v":1}`), ev("x")); return err },
		func() error { return s.Delete(ctx, kind, "free", 9, ev("x")) },
		func() error { _, err := s.Update(ctx, kind, "held", 1, data(`{"v":1}`), ev("x")); return err },
		func() error { return s.Delete(ctx, kind, "held", 1, ev("x")) },
		func() error { _, err := s.AcquireClaim(ctx, kind, "held", time.Minute); return err },
		func() error { _, _, err := s.Checkpoint(ctx, c, 2, 1, data(`{"v":1}`), ev("x")); return err },
		func() error { _, _, err := s.Checkpoint(ctx, c, 1, 9, data(`{"v":1}`), ev("x")); return err },
		func() error { _, _, err := s.Checkpoint(ctx, c, 1, 1, data(`{bad`), ev("x")); return err },
		func() error { _, err := s.Update(ctx, kind, "free", 1, data(`{"v":1}`), state.Event{}); return err },
		func() error {
			stolen := c
			stolen.ID = "not-the-claim"
			_, _, err := s.Checkpoint(ctx, stolen, 1, 1, data(`{"v":1}`), ev("x"))
			return err
		},
	}
	for i, f := range refusals {
		if err := f(); err == nil {
			t.Fatalf("refusal %d succeeded", i)
		}
	}
	after, err := s.List(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("records %v, want %v", after, before)
	}
	for i := range before {
		sameRecord(t, "after refusals", after[i], before[i])
	}
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("refusals journaled: %d entries, want %d", got, n)
	}
	// The claim survived every refusal.
	if _, _, err := s.Checkpoint(ctx, c, 1, 1, data(`{"v":1}`), ev("widget.phase")); err != nil {
		t.Fatal(err)
	}
}

// A record created claimed is never seen without its claim: no other
// process can take it over before its creator's first checkpoint, and it
// checkpoints like any acquired claim.
func testCreateClaimed(t *testing.T, su suite) {
	s := su.Store
	ctx := context.Background()
	c, r, err := createClaimed(s, "a", data(`{"phase":"allocating"}`))
	if err != nil || c.ID == "" || c.Seq != 0 || r.Revision != 1 || c.Holder.PID != os.Getpid() {
		t.Fatalf("CreateClaimed: %+v %+v %v", c, r, err)
	}
	sameRecord(t, "after CreateClaimed", get(t, s, "a"), r)
	_, err = s.AcquireClaim(ctx, kind, "a", time.Minute)
	wantErr[*state.ClaimedError](t, "AcquireClaim of a record created claimed", err)
	_, err = s.Update(ctx, kind, "a", 1, data(`{"v":2}`), ev("widget.changed"))
	wantErr[*state.ClaimedError](t, "Update of a record created claimed", err)
	c, r2, err := s.Checkpoint(ctx, c, 1, 1, data(`{"phase":"preparing"}`), ev("widget.preparing"))
	if err != nil || r2.Revision != 2 || c.Seq != 1 {
		t.Fatalf("Checkpoint: %+v %+v %v", c, r2, err)
	}
	_, _, err = createClaimed(s, "a", data(`{"phase":"preparing"}`))
	wantErr[*state.ConflictError](t, "CreateClaimed of an existing record", err)
	if err := s.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
	es, err := s.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range es {
		types = append(types, e.Type)
	}
	want := []string{"widget.created", state.EventClaimAcquired, "widget.preparing", state.EventClaimReleased}
	if len(types) != len(want) {
		t.Fatalf("journal %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("journal %v, want %v", types, want)
		}
	}
}

// Whoever wins between creating a record claimed and another process
// acquiring its claim, the creator never ends up without the claim on a
// record it made: the acquirer finds nothing, or a claimed record.
func testCreateClaimedRacingAcquire(t *testing.T, su suite) {
	s := su.Store
	ctx := context.Background()
	for i := range 20 {
		name := fmt.Sprintf("r%d", i)
		var wg sync.WaitGroup
		var acqErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, acqErr = s.AcquireClaim(ctx, kind, name, time.Minute)
		}()
		c, _, err := createClaimed(s, name, data(`{}`))
		wg.Wait()
		if err != nil {
			t.Fatalf("round %d: CreateClaimed: %v", i, err)
		}
		if acqErr == nil {
			t.Fatalf("round %d: another holder acquired a record created claimed", i)
		}
		if _, _, err := s.Checkpoint(ctx, c, 1, 1, data(`{"v":1}`), ev("widget.changed")); err != nil {
			t.Fatalf("round %d: the creator lost its claim: %v", i, err)
		}
	}
}

func createClaimed(s state.Store, name string, d json.RawMessage) (c state.Claim, r state.Record, err error) {
	err = s.Txn(context.Background(), func(tx state.Tx) error {
		c, r, err = tx.CreateClaimed(kind, name, d, ev("widget.created"), time.Minute)
		return err
	})
	return c, r, err
}

// ClaimHolder names the live holder without taking the claim (nothing is
// journaled), and nobody once it was released or has expired, or for a
// record that does not exist.
func testClaimHolder(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "a", data(`{}`))
	if c, err := s.ClaimHolder(ctx, kind, "a"); err != nil || c != nil {
		t.Fatalf("ClaimHolder of an unclaimed record = %+v, %v", c, err)
	}
	if c, err := s.ClaimHolder(ctx, kind, "nosuch"); err != nil || c != nil {
		t.Fatalf("ClaimHolder of a missing record = %+v, %v", c, err)
	}
	held := acquire(t, s, "a", time.Minute)
	before := lastEntry(t, s)
	c, err := s.ClaimHolder(ctx, kind, "a")
	if err != nil || c == nil || c.ID != held.ID || c.Holder.PID != os.Getpid() {
		t.Fatalf("ClaimHolder of a held record = %+v, %v; want %+v", c, err, held)
	}
	if after := lastEntry(t, s); after.Seq != before.Seq {
		t.Fatalf("ClaimHolder journaled %+v", after)
	}
	if err := s.ReleaseClaim(ctx, held); err != nil {
		t.Fatal(err)
	}
	if c, err := s.ClaimHolder(ctx, kind, "a"); err != nil || c != nil {
		t.Fatalf("ClaimHolder after release = %+v, %v", c, err)
	}
	acquire(t, s, "a", 30*time.Millisecond)
	s.clock.Advance(60 * time.Millisecond)
	if c, err := s.ClaimHolder(ctx, kind, "a"); err != nil || c != nil {
		t.Fatalf("ClaimHolder of an expired claim = %+v, %v", c, err)
	}
}
