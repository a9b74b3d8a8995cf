package statetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// RunCopier checks a backend's state.Copier: a journal and records
// imported into an empty store read back exactly as in the source, and
// writes then carry on from where the source's journal stopped.
func RunCopier(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, src, dst state.Copier, clock *Clock)
	}{
		{"ImportRoundTrip", testImportRoundTrip},
		{"ImportJournalChecks", testImportJournalChecks},
		{"LiveClaims", testLiveClaims},
		{"Copy", testCopy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &Clock{}
			src, ok := open(t, clock).(state.Copier)
			dst, ok2 := open(t, clock).(state.Copier)
			if !ok || !ok2 {
				t.Fatalf("%T does not implement state.Copier", src)
			}
			tc.fn(t, src, dst, clock)
		})
	}
}

// populate writes a little history: two kinds, updates, a claim, a delete.
func populate(t *testing.T, s state.Store) {
	t.Helper()
	ctx := context.Background()
	create(t, s, "a", data(`{"v":1}`))
	create(t, s, "b", data(`{"v":1}`))
	if _, err := s.Create(ctx, "gadget", "g", data(`{"html":"<a&b>"}`), ev("gadget.added")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, kind, "a", 1, data(`{"v":2}`), state.Event{Type: "widget.changed", Detail: data(`{"why":"test"}`)}); err != nil {
		t.Fatal(err)
	}
	c := acquire(t, s, "a", time.Minute)
	if _, _, err := s.Checkpoint(ctx, c, 1, 2, data(`{"v":3}`), ev("widget.phase")); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, kind, "b", 1, ev("widget.removed")); err != nil {
		t.Fatal(err)
	}
}

func listAll(t *testing.T, s state.Copier) []state.Record {
	t.Helper()
	ctx := context.Background()
	kinds, err := s.Kinds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []state.Record
	for _, k := range kinds {
		recs, err := s.List(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func testImportRoundTrip(t *testing.T, src, dst state.Copier, _ *Clock) {
	ctx := context.Background()
	populate(t, src)
	epoch, err := src.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	es := journal(t, src, 0)
	if err := dst.ImportJournal(ctx, epoch, es[:3]); err != nil {
		t.Fatalf("ImportJournal into an empty store: %v", err)
	}
	if err := dst.ImportJournal(ctx, epoch, es[3:]); err != nil {
		t.Fatalf("ImportJournal continuing it: %v", err)
	}
	if got, _ := dst.Epoch(ctx); got != epoch {
		t.Fatalf("imported store's epoch %d, want %d", got, epoch)
	}
	if got := journal(t, dst, 0); !sameEntries(got, es) {
		t.Fatalf("imported journal\n%+v\nwant\n%+v", got, es)
	}
	recs := listAll(t, src)
	for _, r := range recs {
		if err := dst.ImportRecord(ctx, r); err != nil {
			t.Fatalf("ImportRecord %s/%s: %v", r.Kind, r.Name, err)
		}
	}
	got := listAll(t, dst)
	if len(got) != len(recs) || len(got) != 2 {
		t.Fatalf("imported records %+v, want %+v", got, recs)
	}
	for i := range recs {
		sameRecord(t, "imported record", got[i], recs[i])
	}
	if kinds, err := dst.Kinds(ctx); err != nil || fmt.Sprint(kinds) != "[gadget widget]" {
		t.Fatalf("Kinds = %v, %v", kinds, err)
	}
	// A second import of the same record is the same store.
	if err := dst.ImportRecord(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, "re-imported record", get2(t, dst, recs[0]), recs[0])

	// Writes carry on: the next entry follows the imported ones, and CAS
	// works at the imported revision.
	a := get(t, dst, "a")
	if _, err := dst.Update(ctx, kind, "a", a.Revision, data(`{"v":4}`), ev("widget.changed")); err != nil {
		t.Fatalf("Update at the imported revision %d: %v", a.Revision, err)
	}
	all := journal(t, dst, 0)
	checkContiguous(t, all, len(es)+1)
	if last := all[len(all)-1]; last.Epoch != epoch || last.Revision != a.Revision+1 {
		t.Fatalf("first entry after the import: %+v", last)
	}

	n := len(all)
	if err := dst.RemoveRecord(ctx, kind, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Get(ctx, kind, "a"); err == nil {
		t.Fatal("RemoveRecord left the record")
	}
	if got := len(journal(t, dst, 0)); got != n {
		t.Fatalf("RemoveRecord journaled: %d entries, want %d", got, n)
	}
	if err := dst.RemoveRecord(ctx, kind, "a"); err != nil {
		t.Fatalf("RemoveRecord of a missing record: %v", err)
	}
}

func get2(t *testing.T, s state.Store, r state.Record) state.Record {
	t.Helper()
	got, err := s.Get(context.Background(), r.Kind, r.Name)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sameEntries compares entries field by field (times as instants, details
// as JSON).
func sameEntries(a, b []state.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.At.Equal(y.At) || !sameJSON(x.Detail, y.Detail) && (len(x.Detail) > 0 || len(y.Detail) > 0) {
			return false
		}
		x.At, y.At, x.Detail, y.Detail = time.Time{}, time.Time{}, nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// testImportJournalChecks: an import that does not continue the journal
// is refused whole, and a store holding records adopts no other journal.
func testImportJournalChecks(t *testing.T, src, dst state.Copier, _ *Clock) {
	ctx := context.Background()
	populate(t, src)
	epoch, _ := src.Epoch(ctx)
	es := journal(t, src, 0)
	a := get(t, src, "a")
	if err := dst.ImportRecord(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := dst.ImportJournal(ctx, epoch, es); err == nil {
		t.Fatal("a store holding records adopted another journal")
	}
	if err := dst.RemoveRecord(ctx, kind, "a"); err != nil {
		t.Fatal(err)
	}
	if err := dst.ImportJournal(ctx, epoch, es[1:]); err == nil {
		t.Fatal("an import starting at seq 2 into an empty journal was accepted")
	}
	gap := append(append([]state.Entry{}, es[:2]...), es[3:]...)
	if err := dst.ImportJournal(ctx, epoch, gap); err == nil {
		t.Fatal("an import with a gap was accepted")
	}
	if got := journal(t, dst, 0); len(got) != 0 {
		t.Fatalf("refused imports appended %d entries", len(got))
	}
	if err := dst.ImportJournal(ctx, epoch, es[:2]); err != nil {
		t.Fatal(err)
	}
	other := append([]state.Entry{}, es[2:3]...)
	other[0].Epoch = epoch + 2
	if err := dst.ImportJournal(ctx, epoch+2, other); err == nil {
		t.Fatal("an import of another epoch into a journal with entries was accepted")
	}
	if got := journal(t, dst, 0); len(got) != 2 {
		t.Fatalf("journal after refusals: %d entries, want 2", len(got))
	}
}

// testLiveClaims: held claims are listed; released and expired ones not.
func testLiveClaims(t *testing.T, src, _ state.Copier, clock *Clock) {
	ctx := context.Background()
	create(t, src, "a", data(`{}`))
	create(t, src, "b", data(`{}`))
	if cs, err := src.LiveClaims(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("LiveClaims of an unclaimed store = %+v, %v", cs, err)
	}
	ca := acquire(t, src, "a", time.Minute)
	acquire(t, src, "b", time.Hour)
	cs, err := src.LiveClaims(ctx)
	if err != nil || len(cs) != 2 {
		t.Fatalf("LiveClaims = %+v, %v; want 2", cs, err)
	}
	if err := src.ReleaseClaim(ctx, ca); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if cs, err := src.LiveClaims(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("LiveClaims after release and expiry = %+v, %v", cs, err)
	}
}

// RunCopy checks state.Copy from stores of one backend into stores of
// another (or the same).
func RunCopy(t *testing.T, openSrc, openDst Opener) {
	clock := &Clock{}
	src, ok := openSrc(t, clock).(state.Copier)
	dst, ok2 := openDst(t, clock).(state.Copier)
	if !ok || !ok2 {
		t.Fatalf("%T or %T does not implement state.Copier", src, dst)
	}
	testCopy(t, src, dst, clock)
}

// testCopy: a copy holds the source's records and journal; a second copy
// changes nothing; a copy after more writes brings over only those, and
// removes what the source deleted; live claims and a target holding
// another journal are refused.
func testCopy(t *testing.T, src, dst state.Copier, clock *Clock) {
	ctx := context.Background()
	populate(t, src)
	// An earlier copy stopped after three entries and one record.
	es := journal(t, src, 0)
	epoch, _ := src.Epoch(ctx)
	if err := dst.ImportJournal(ctx, epoch, es[:3]); err != nil {
		t.Fatal(err)
	}
	if err := dst.ImportRecord(ctx, get(t, src, "a")); err != nil {
		t.Fatal(err)
	}
	r, err := state.Copy(ctx, src, dst, nil)
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if r.EntriesCopied != len(es)-3 || r.RecordsCopied != 1 || r.RecordsUnchanged != 1 || r.JournalSeq != uint64(len(es)) {
		t.Fatalf("Copy resuming an interrupted one reported %+v", r)
	}
	sameStores(t, src, dst)

	r, err = state.Copy(ctx, src, dst, nil)
	if err != nil || r.EntriesCopied != 0 || r.RecordsCopied != 0 || r.RecordsUnchanged != 2 || r.RecordsRemoved != 0 {
		t.Fatalf("second Copy = %+v, %v; want nothing copied", r, err)
	}

	// More history: an update, a new record, a deletion.
	a := get(t, src, "a")
	if _, err := src.Update(ctx, kind, "a", a.Revision, data(`{"v":9}`), ev("widget.changed")); err != nil {
		t.Fatal(err)
	}
	create(t, src, "n", data(`{}`))
	g := get2(t, src, state.Record{Kind: "gadget", Name: "g"})
	if err := src.Delete(ctx, "gadget", "g", g.Revision, ev("gadget.removed")); err != nil {
		t.Fatal(err)
	}
	r, err = state.Copy(ctx, src, dst, nil)
	if err != nil || r.EntriesCopied != 3 || r.RecordsCopied != 2 || r.RecordsRemoved != 1 {
		t.Fatalf("Copy after more writes = %+v, %v; want 3 entries, 2 records, 1 removed", r, err)
	}
	sameStores(t, src, dst)

	c := acquire(t, src, "a", time.Minute)
	if _, err := state.Copy(ctx, src, dst, nil); !isClaimed(err) {
		t.Fatalf("Copy with a live claim: %v; want *ClaimedError", err)
	}
	if err := src.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}

	// A target written to on its own is another store now.
	create(t, dst, "own", data(`{}`))
	if _, err := state.Copy(ctx, src, dst, nil); err == nil || !strings.Contains(err.Error(), "migrate into an empty store") {
		t.Fatalf("Copy onto a target that moved on: %v", err)
	}
	if _, err := state.Copy(ctx, dst, src, nil); err == nil || !strings.Contains(err.Error(), "migrate into an empty store") {
		t.Fatalf("Copy back onto the diverged source: %v", err)
	}
}

func isClaimed(err error) bool {
	var ce *state.ClaimedError
	return errors.As(err, &ce)
}

// sameStores: the same epoch, journal and records.
func sameStores(t *testing.T, a, b state.Copier) {
	t.Helper()
	ctx := context.Background()
	ea, _ := a.Epoch(ctx)
	eb, _ := b.Epoch(ctx)
	if ea != eb {
		t.Fatalf("epochs %d and %d", ea, eb)
	}
	if ja, jb := journal(t, a, 0), journal(t, b, 0); !sameEntries(ja, jb) {
		t.Fatalf("journals differ:\n%+v\n%+v", ja, jb)
	}
	ra, rb := listAll(t, a), listAll(t, b)
	if len(ra) != len(rb) {
		t.Fatalf("records differ:\n%+v\n%+v", ra, rb)
	}
	for i := range ra {
		sameRecord(t, "copied record", rb[i], ra[i])
	}
}
