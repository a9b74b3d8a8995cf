// Package statetest is the conformance suite for state.Store backends:
// idempotent create, compare-and-swap, claim fencing, expiry and renewal,
// journal order and following, transactions whose reads still hold when
// their write lands, the rule that a refused write changes nothing, and
// (RunCrash) that a writer killed at any point leaves every record and
// journal entry whole.
package statetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// Clock is the time a store under test reads for timestamps and claim
// expiry: the real time plus an offset the suite moves forward, so claims
// expire without waiting (a backend may count its leases in whole
// seconds, with a floor).
type Clock struct {
	mu    sync.Mutex
	ahead time.Duration
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.ahead)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.ahead += d
	c.mu.Unlock()
}

// Opener returns a fresh, empty store reading time from clock, and
// arranges its cleanup.
type Opener func(t *testing.T, clock *Clock) state.Store

// suite is what each test gets: the store and its clock.
type suite struct {
	state.Store
	clock *Clock
}

// Run checks a backend.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, suite)
	}{
		{"CreateGet", testCreateGet},
		{"CreateIdempotent", testCreateIdempotent},
		{"CreateConflictingData", testCreateConflictingData},
		{"NotFound", testNotFound},
		{"InvalidKeys", testInvalidKeys},
		{"ListSortedAndEmpty", testList},
		{"UpdateCAS", testUpdateCAS},
		{"DeleteCAS", testDeleteCAS},
		{"ConcurrentIncrements", testConcurrentIncrements},
		{"JournalOrder", testJournalOrder},
		{"JournalAfter", testJournalAfter},
		{"ClaimExclusive", testClaimExclusive},
		{"CheckpointAdvances", testCheckpointAdvances},
		{"CheckpointStaleSeq", testCheckpointStaleSeq},
		{"CheckpointStaleRevision", testCheckpointStaleRevision},
		{"CheckpointStaleClaimID", testCheckpointStaleClaimID},
		{"ExpiredClaim", testExpiredClaim},
		{"ConcurrentAcquire", testConcurrentAcquire},
		{"ClaimHolder", testClaimHolder},
		{"CreateClaimed", testCreateClaimed},
		{"CreateClaimedRacingAcquire", testCreateClaimedRacingAcquire},
		{"RefusedWritesChangeNothing", testRefusedWritesChangeNothing},
		{"DiscardReadable", testDiscardReadable},
		{"TxnCommitsItsWrite", testTxnCommitsItsWrite},
		{"TxnErrorWritesNothing", testTxnErrorWritesNothing},
		{"TxnOneWrite", testTxnOneWrite},
		{"TxnWriteChecks", testTxnWriteChecks},
		{"TxnChecksHoldAtCommit", testTxnChecksHoldAtCommit},
		{"RenewClaim", testRenewClaim},
		{"KeepClaimRenews", testKeepClaimRenews},
		{"KeepClaimLost", testKeepClaimLost},
		{"Follow", testFollow},
		{"FollowNewEpoch", testFollowNewEpoch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &Clock{}
			tc.fn(t, suite{Store: open(t, clock), clock: clock})
		})
	}
}

const kind state.Kind = "widget"

func data(format string, args ...any) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(format, args...))
}

func ev(typ string) state.Event { return state.Event{Type: typ} }

// sameJSON compares ignoring insignificant whitespace, the only freedom a
// backend has in storing data.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

func create(t *testing.T, s state.Store, name string, d json.RawMessage) state.Record {
	t.Helper()
	r, err := s.Create(context.Background(), kind, name, d, ev("widget.added"))
	if err != nil {
		t.Fatalf("Create %s: %v", name, err)
	}
	return r
}

func get(t *testing.T, s state.Store, name string) state.Record {
	t.Helper()
	r, err := s.Get(context.Background(), kind, name)
	if err != nil {
		t.Fatalf("Get %s: %v", name, err)
	}
	return r
}

func journal(t *testing.T, s state.Store, after uint64) []state.Entry {
	t.Helper()
	es, err := s.Journal(context.Background(), after)
	if err != nil {
		t.Fatalf("Journal(%d): %v", after, err)
	}
	return es
}

func lastEntry(t *testing.T, s state.Store) state.Entry {
	t.Helper()
	es := journal(t, s, 0)
	if len(es) == 0 {
		t.Fatal("journal is empty")
	}
	return es[len(es)-1]
}

// wantErr checks that err is (or wraps) an error of type T and returns it.
func wantErr[T error](t *testing.T, op string, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("%s: got error %v, want %T", op, err, target)
	}
	return target
}

func sameRecord(t *testing.T, op string, got, want state.Record) {
	t.Helper()
	if got.Kind != want.Kind || got.Name != want.Name || got.Revision != want.Revision ||
		!got.UpdatedAt.Equal(want.UpdatedAt) || !sameJSON(got.Data, want.Data) {
		t.Fatalf("%s: record is %+v, want %+v", op, got, want)
	}
}
