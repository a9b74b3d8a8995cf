package statetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// txn runs fn as a transaction and fails the test on an error.
func txn(t *testing.T, s state.Store, fn func(state.Tx) error) {
	t.Helper()
	if err := s.Txn(context.Background(), fn); err != nil {
		t.Fatalf("Txn: %v", err)
	}
}

func testTxnCommitsItsWrite(t *testing.T, s suite) {
	create(t, s, "a", data(`{"v":1}`))
	create(t, s, "b", data(`{}`))
	n := len(journal(t, s, 0))
	var got state.Record
	txn(t, s, func(tx state.Tx) error {
		r, err := tx.Get(kind, "a")
		if err != nil {
			return err
		}
		recs, err := tx.List(kind)
		if err != nil {
			return err
		}
		if len(recs) != 2 || recs[0].Name != "a" || recs[1].Name != "b" {
			return fmt.Errorf("List in a Txn = %+v", recs)
		}
		got, err = tx.Update(kind, "a", r.Revision, data(`{"v":2}`), ev("widget.changed"))
		return err
	})
	if got.Revision != 2 || !sameJSON(got.Data, data(`{"v":2}`)) {
		t.Fatalf("tx.Update returned %+v", got)
	}
	sameRecord(t, "Get after Txn", get(t, s, "a"), got)
	es := journal(t, s, 0)
	if len(es) != n+1 || es[n].Type != "widget.changed" || es[n].Name != "a" || es[n].Revision != 2 {
		t.Fatalf("journal after Txn: %+v", es[n:])
	}
}

// testTxnErrorWritesNothing: an error from fn discards the write made
// before it, and comes back unchanged.
func testTxnErrorWritesNothing(t *testing.T, s suite) {
	ctx := context.Background()
	r := create(t, s, "a", data(`{"v":1}`))
	n := len(journal(t, s, 0))
	abort := errors.New("changed my mind")
	writes := map[string]func(state.Tx) error{
		"Create": func(tx state.Tx) error { _, err := tx.Create(kind, "new", data(`{}`), ev("widget.added")); return err },
		"Update": func(tx state.Tx) error {
			_, err := tx.Update(kind, "a", 1, data(`{"v":2}`), ev("widget.changed"))
			return err
		},
		"Delete": func(tx state.Tx) error { return tx.Delete(kind, "a", 1, ev("widget.removed")) },
	}
	for op, write := range writes {
		err := s.Txn(ctx, func(tx state.Tx) error {
			if err := write(tx); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			return abort
		})
		if !errors.Is(err, abort) {
			t.Fatalf("Txn with %s then an error returned %v, want the error", op, err)
		}
	}
	sameRecord(t, "after aborted Txns", get(t, s, "a"), r)
	if _, err := s.Get(ctx, kind, "new"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("aborted Create left a record: %v", err)
	}
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("aborted Txns journaled: %d entries, want %d", got, n)
	}
}

// testTxnOneWrite: the write is the last call; later calls fail and the
// write still lands when fn returns nil.
func testTxnOneWrite(t *testing.T, s suite) {
	ctx := context.Background()
	txn(t, s, func(tx state.Tx) error {
		if _, err := tx.Create(kind, "x", data(`{}`), ev("widget.added")); err != nil {
			return err
		}
		if _, err := tx.Get(kind, "x"); !errors.Is(err, state.ErrTxnWritten) {
			return fmt.Errorf("Get after the write: %v", err)
		}
		if _, err := tx.List(kind); !errors.Is(err, state.ErrTxnWritten) {
			return fmt.Errorf("List after the write: %v", err)
		}
		if _, err := tx.Create(kind, "y", data(`{}`), ev("widget.added")); !errors.Is(err, state.ErrTxnWritten) {
			return fmt.Errorf("second Create: %v", err)
		}
		if err := tx.Delete(kind, "x", 1, ev("widget.removed")); !errors.Is(err, state.ErrTxnWritten) {
			return fmt.Errorf("Delete after the write: %v", err)
		}
		return nil
	})
	get(t, s, "x")
	if _, err := s.Get(ctx, kind, "y"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("second write of a Txn landed: %v", err)
	}
	checkContiguous(t, journal(t, s, 0), 1)

	// A refused write is the write too.
	txn(t, s, func(tx state.Tx) error {
		_, err := tx.Update(kind, "x", 7, data(`{}`), ev("widget.changed"))
		wantErr[*state.ConflictError](t, "tx.Update at a wrong revision", err)
		if _, err := tx.Create(kind, "y", data(`{}`), ev("widget.added")); !errors.Is(err, state.ErrTxnWritten) {
			return fmt.Errorf("Create after a refused write: %v", err)
		}
		return nil
	})
	checkContiguous(t, journal(t, s, 0), 1)

	// A Tx kept past its Txn is dead.
	var kept state.Tx
	txn(t, s, func(tx state.Tx) error { kept = tx; return nil })
	if _, err := kept.Create(kind, "late", data(`{}`), ev("widget.added")); err == nil {
		t.Fatal("a Tx used after its Txn returned accepted a write")
	}
	if _, err := s.Get(ctx, kind, "late"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("late write landed: %v", err)
	}
}

// testTxnWriteChecks: writes in a Txn answer as the Store's do.
func testTxnWriteChecks(t *testing.T, s suite) {
	ctx := context.Background()
	r := create(t, s, "a", data(`{"x":1}`))
	n := len(journal(t, s, 0))
	try := func(fn func(state.Tx) error) error { return s.Txn(ctx, fn) }
	err := try(func(tx state.Tx) error {
		_, err := tx.Update(kind, "a", 2, data(`{}`), ev("widget.changed"))
		return err
	})
	if ce := wantErr[*state.ConflictError](t, "tx.Update at a wrong revision", err); ce.Expected != 2 || ce.Actual != 1 {
		t.Fatalf("conflict %+v", ce)
	}
	err = try(func(tx state.Tx) error {
		_, err := tx.Create(kind, "a", data(`{"x":2}`), ev("widget.added"))
		return err
	})
	wantErr[*state.ConflictError](t, "tx.Create with other data", err)
	err = try(func(tx state.Tx) error { return tx.Delete(kind, "ghost", 1, ev("widget.removed")) })
	wantErr[*state.NotFoundError](t, "tx.Delete of a missing record", err)
	err = try(func(tx state.Tx) error { _, err := tx.Get(kind, "ghost"); return err })
	wantErr[*state.NotFoundError](t, "tx.Get of a missing record", err)
	err = try(func(tx state.Tx) error {
		_, err := tx.Create(kind, "../x", data(`{}`), ev("widget.added"))
		return err
	})
	if err == nil {
		t.Fatal("tx.Create accepted an invalid name")
	}
	var same state.Record
	txn(t, s, func(tx state.Tx) (err error) {
		same, err = tx.Create(kind, "a", data(`{ "x": 1 }`), ev("widget.added"))
		return err
	})
	sameRecord(t, "tx.Create of identical data", same, r)

	c := acquire(t, s, "a", time.Minute)
	n++ // the claim's own entry
	err = try(func(tx state.Tx) error {
		_, err := tx.Update(kind, "a", 1, data(`{}`), ev("widget.changed"))
		return err
	})
	wantErr[*state.ClaimedError](t, "tx.Update of a claimed record", err)
	if err := s.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
	n++
	sameRecord(t, "after refused Txns", get(t, s, "a"), r)
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("refused Txns journaled: %d entries, want %d", got, n)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = s.Txn(cancelled, func(tx state.Tx) error {
		_, err := tx.Create(kind, "late", data(`{}`), ev("widget.added"))
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Txn with a cancelled context: %v", err)
	}
	if _, err := s.Get(ctx, kind, "late"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("cancelled Txn wrote: %v", err)
	}
}

// testTxnChecksHoldAtCommit is the reason Txn exists: a remover that
// deletes a parent only while no child names it, racing an adder that
// creates a child only while the parent exists, never leaves a child
// naming a deleted parent.
func testTxnChecksHoldAtCommit(t *testing.T, s suite) {
	const rounds = 30
	const child state.Kind = "gadget"
	ctx := context.Background()
	errInUse := errors.New("in use")
	errGone := errors.New("parent gone")
	for round := range rounds {
		create(t, s, "p", data(`{"round":%d}`, round))
		name := fmt.Sprintf("c%d", round)
		var wg sync.WaitGroup
		var errRm, errAdd error
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			errRm = s.Txn(ctx, func(tx state.Tx) error {
				p, err := tx.Get(kind, "p")
				if err != nil {
					return err
				}
				kids, err := tx.List(child)
				if err != nil {
					return err
				}
				for _, k := range kids {
					var v struct{ Parent string }
					if json.Unmarshal(k.Data, &v) == nil && v.Parent == "p" {
						return errInUse
					}
				}
				return tx.Delete(kind, "p", p.Revision, ev("widget.removed"))
			})
		})
		wg.Go(func() {
			<-start
			errAdd = s.Txn(ctx, func(tx state.Tx) error {
				if _, err := tx.Get(kind, "p"); errors.Is(err, state.ErrNotFound) {
					return errGone
				} else if err != nil {
					return err
				}
				_, err := tx.Create(child, name, data(`{"parent":"p"}`), ev("gadget.added"))
				return err
			})
		})
		close(start)
		wg.Wait()
		if errRm != nil && !errors.Is(errRm, errInUse) || errAdd != nil && !errors.Is(errAdd, errGone) {
			t.Fatalf("round %d: remove: %v, add: %v", round, errRm, errAdd)
		}
		_, perr := s.Get(ctx, kind, "p")
		_, cerr := s.Get(ctx, child, name)
		if errors.Is(perr, state.ErrNotFound) && cerr == nil {
			t.Fatalf("round %d: child %s names parent p, which was deleted", round, name)
		}
		if (errRm == nil) == (errAdd == nil) {
			t.Fatalf("round %d: remove: %v, add: %v; want exactly one to succeed", round, errRm, errAdd)
		}
		if perr == nil {
			r := get(t, s, "p")
			if err := s.Delete(ctx, kind, "p", r.Revision, ev("widget.removed")); err != nil {
				t.Fatal(err)
			}
		}
	}
}
