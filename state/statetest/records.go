package statetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

func testCreateGet(t *testing.T, s suite) {
	d := data(`{"addr": "10.0.0.1", "tags": ["<a&b>"]}`)
	r := create(t, s, "web-1", d)
	if r.Kind != kind || r.Name != "web-1" || r.Revision != 1 || r.UpdatedAt.IsZero() || !sameJSON(r.Data, d) {
		t.Fatalf("Create returned %+v", r)
	}
	if r.SchemaVersion != state.SchemaVersion {
		t.Fatalf("schema_version %d, want %d", r.SchemaVersion, state.SchemaVersion)
	}
	sameRecord(t, "Get", get(t, s, "web-1"), r)
}

func testCreateIdempotent(t *testing.T, s suite) {
	first := create(t, s, "a", data(`{"x":1}`))
	n := len(journal(t, s, 0))
	again := create(t, s, "a", data(`{ "x" : 1 }`))
	sameRecord(t, "repeated Create", again, first)
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("repeated Create journaled: %d entries, want %d", got, n)
	}
}

func testCreateConflictingData(t *testing.T, s suite) {
	first := create(t, s, "a", data(`{"x":1}`))
	_, err := s.Create(context.Background(), kind, "a", data(`{"x":2}`), ev("widget.added"))
	ce := wantErr[*state.ConflictError](t, "Create with other data", err)
	if ce.Expected != 0 || ce.Actual != 1 || ce.Kind != kind || ce.Name != "a" {
		t.Fatalf("conflict %+v", ce)
	}
	sameRecord(t, "after refused Create", get(t, s, "a"), first)
}

func testNotFound(t *testing.T, s suite) {
	ctx := context.Background()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("%s: got %v, want ErrNotFound", op, err)
		}
		nf := wantErr[*state.NotFoundError](t, op, err)
		if nf.Kind != kind || nf.Name != "ghost" {
			t.Fatalf("%s: names %s %q", op, nf.Kind, nf.Name)
		}
	}
	_, err := s.Get(ctx, kind, "ghost")
	check("Get", err)
	_, err = s.Update(ctx, kind, "ghost", 1, data(`{}`), ev("widget.changed"))
	check("Update", err)
	check("Delete", s.Delete(ctx, kind, "ghost", 1, ev("widget.removed")))
	_, err = s.AcquireClaim(ctx, kind, "ghost", time.Minute)
	check("AcquireClaim", err)
	// A sibling existing must not change the answer.
	create(t, s, "real", data(`{}`))
	_, err = s.Get(ctx, kind, "ghost")
	check("Get beside a record", err)
}

func testInvalidKeys(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "ok", data(`{}`))
	badNames := []string{"", ".", "..", "../ok", "a/b", `a\b`, ".hidden", "-x", "a b", "ok\x00", strings.Repeat("n", 129)}
	for _, name := range badNames {
		if _, err := s.Create(ctx, kind, name, data(`{}`), ev("widget.added")); err == nil {
			t.Errorf("Create accepted name %q", name)
		}
		if _, err := s.Get(ctx, kind, name); err == nil {
			t.Errorf("Get accepted name %q", name)
		}
	}
	for _, k := range []state.Kind{"", "..", "Widget", "a/b", ".x", "_x"} {
		if _, err := s.Create(ctx, k, "n", data(`{}`), ev("widget.added")); err == nil {
			t.Errorf("Create accepted kind %q", k)
		}
		if _, err := s.List(ctx, k); err == nil {
			t.Errorf("List accepted kind %q", k)
		}
	}
	if _, err := s.Create(ctx, kind, "n", data(`{not json`), ev("widget.added")); err == nil {
		t.Error("Create accepted invalid JSON")
	}
	if got := len(journal(t, s, 0)); got != 1 {
		t.Fatalf("refused creates journaled: %d entries, want 1", got)
	}
	if _, err := s.Create(ctx, kind, strings.Repeat("n", 128), data(`{}`), ev("widget.added")); err != nil {
		t.Fatalf("128-byte name refused: %v", err)
	}
}

func testList(t *testing.T, s suite) {
	ctx := context.Background()
	recs, err := s.List(ctx, kind)
	if err != nil || recs == nil || len(recs) != 0 {
		t.Fatalf("List of empty kind = %#v, %v; want [] and no error", recs, err)
	}
	names := []string{"b", "a-b", "a", "B", "a.b", "c9", "c10"}
	for _, n := range names {
		create(t, s, n, data(`{"n":%q}`, n))
	}
	if _, err := s.Create(ctx, "other", "zz", data(`{}`), ev("other.added")); err != nil {
		t.Fatal(err)
	}
	recs, err = s.List(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"B", "a", "a-b", "a.b", "b", "c10", "c9"}
	var got []string
	for _, r := range recs {
		got = append(got, r.Name)
		if r.Kind != kind || !sameJSON(r.Data, data(`{"n":%q}`, r.Name)) {
			t.Fatalf("List returned %+v", r)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List order %v, want %v", got, want)
	}
}

func testUpdateCAS(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "a", data(`{"v":1}`))
	r2, err := s.Update(ctx, kind, "a", 1, data(`{"v":2}`), ev("widget.changed"))
	if err != nil || r2.Revision != 2 || !sameJSON(r2.Data, data(`{"v":2}`)) {
		t.Fatalf("Update = %+v, %v", r2, err)
	}
	_, err = s.Update(ctx, kind, "a", 1, data(`{"v":3}`), ev("widget.changed"))
	ce := wantErr[*state.ConflictError](t, "Update at old revision", err)
	if ce.Expected != 1 || ce.Actual != 2 {
		t.Fatalf("conflict %+v, want expected 1 actual 2", ce)
	}
	sameRecord(t, "after refused Update", get(t, s, "a"), r2)
}

func testDeleteCAS(t *testing.T, s suite) {
	ctx := context.Background()
	create(t, s, "a", data(`{}`))
	r2, err := s.Update(ctx, kind, "a", 1, data(`{"v":2}`), ev("widget.changed"))
	if err != nil {
		t.Fatal(err)
	}
	ce := wantErr[*state.ConflictError](t, "Delete at old revision", s.Delete(ctx, kind, "a", 1, ev("widget.removed")))
	if ce.Expected != 1 || ce.Actual != 2 {
		t.Fatalf("conflict %+v", ce)
	}
	sameRecord(t, "after refused Delete", get(t, s, "a"), r2)
	if err := s.Delete(ctx, kind, "a", 2, ev("widget.removed")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, kind, "a"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if recs, err := s.List(ctx, kind); err != nil || len(recs) != 0 {
		t.Fatalf("List after Delete = %v, %v", recs, err)
	}
	if e := lastEntry(t, s); e.Type != "widget.removed" || e.Name != "a" {
		t.Fatalf("last journal entry %+v", e)
	}
}

// testConcurrentIncrements: CAS with retry loses no update.
func testConcurrentIncrements(t *testing.T, s suite) {
	const workers, each = 6, 10
	ctx := context.Background()
	create(t, s, "counter", data(`{"n":0}`))
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for i := 0; i < each; {
				r, err := s.Get(ctx, kind, "counter")
				if err != nil {
					errs <- err
					return
				}
				var v struct{ N int }
				if err := json.Unmarshal(r.Data, &v); err != nil {
					errs <- err
					return
				}
				_, err = s.Update(ctx, kind, "counter", r.Revision, data(`{"n":%d}`, v.N+1), ev("widget.changed"))
				var ce *state.ConflictError
				switch {
				case errors.As(err, &ce):
				case err != nil:
					errs <- err
					return
				default:
					i++
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r := get(t, s, "counter")
	if !sameJSON(r.Data, data(`{"n":%d}`, workers*each)) || r.Revision != workers*each+1 {
		t.Fatalf("counter %s at revision %d, want n=%d revision %d", r.Data, r.Revision, workers*each, workers*each+1)
	}
	checkContiguous(t, journal(t, s, 0), workers*each+1)
}

// testDiscardReadable: Discard is only for records Get cannot read; a
// readable one is left alone, a missing one is not found.
func testDiscardReadable(t *testing.T, s suite) {
	ctx := context.Background()
	r := create(t, s, "a", data(`{}`))
	n := len(journal(t, s, 0))
	if err := s.Discard(ctx, kind, "a", ev("widget.discarded")); err == nil {
		t.Fatal("Discard removed a readable record")
	}
	sameRecord(t, "after refused Discard", get(t, s, "a"), r)
	if err := s.Discard(ctx, kind, "ghost", ev("widget.discarded")); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Discard of a missing record: %v", err)
	}
	if got := len(journal(t, s, 0)); got != n {
		t.Fatalf("refused Discards journaled: %d entries, want %d", got, n)
	}
	if s.Locate(kind, "a") == s.Locate(kind, "b") || s.Locate(kind, "a") == "" {
		t.Fatalf("Locate does not tell records apart: %q", s.Locate(kind, "a"))
	}
}
