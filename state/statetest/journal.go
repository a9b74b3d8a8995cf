package statetest

import (
	"context"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// checkContiguous: n entries, seq 1..n, one epoch, the store's epoch.
func checkContiguous(t *testing.T, es []state.Entry, n int) {
	t.Helper()
	if len(es) != n {
		t.Fatalf("journal has %d entries, want %d", len(es), n)
	}
	for i, e := range es {
		if e.Seq != uint64(i+1) || e.Epoch != es[0].Epoch || e.At.IsZero() {
			t.Fatalf("journal entry %d is %+v (epoch of first %d)", i, e, es[0].Epoch)
		}
	}
}

func testJournalOrder(t *testing.T, s suite) {
	ctx := context.Background()
	epoch, err := s.Epoch(ctx)
	if err != nil || epoch == 0 {
		t.Fatalf("Epoch = %d, %v", epoch, err)
	}
	if es := journal(t, s, 0); es == nil || len(es) != 0 {
		t.Fatalf("fresh journal = %#v, want []", es)
	}
	create(t, s, "a", data(`{}`))
	if _, err := s.Update(ctx, kind, "a", 1, data(`{"v":2}`), state.Event{Type: "widget.changed", Detail: data(`{"why": "test"}`)}); err != nil {
		t.Fatal(err)
	}
	c, err := s.AcquireClaim(ctx, kind, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Checkpoint(ctx, c, 1, 2, data(`{"v":3}`), ev("widget.phase")); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseClaim(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, kind, "a", 3, ev("widget.removed")); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ string
		rev uint64
	}{
		{"widget.added", 1}, {"widget.changed", 2}, {state.EventClaimAcquired, 2},
		{"widget.phase", 3}, {state.EventClaimReleased, 3}, {"widget.removed", 3},
	}
	es := journal(t, s, 0)
	checkContiguous(t, es, len(want))
	for i, w := range want {
		e := es[i]
		if e.Epoch != epoch || e.Kind != kind || e.Name != "a" || e.Type != w.typ || e.Revision != w.rev {
			t.Fatalf("entry %d = %+v, want type %s revision %d epoch %d", i, e, w.typ, w.rev, epoch)
		}
	}
	if !sameJSON(es[1].Detail, data(`{"why":"test"}`)) {
		t.Fatalf("detail %s", es[1].Detail)
	}
	for i := 1; i < len(es); i++ {
		if es[i].At.Before(es[i-1].At) {
			t.Fatalf("entry %d is earlier than entry %d", i, i-1)
		}
	}
}

func testJournalAfter(t *testing.T, s suite) {
	for _, n := range []string{"a", "b", "c", "d"} {
		create(t, s, n, data(`{}`))
	}
	es := journal(t, s, 2)
	if len(es) != 2 || es[0].Seq != 3 || es[0].Name != "c" || es[1].Seq != 4 {
		t.Fatalf("Journal(2) = %+v", es)
	}
	if es := journal(t, s, 4); len(es) != 0 {
		t.Fatalf("Journal(4) = %+v, want none", es)
	}
	if es := journal(t, s, 99); len(es) != 0 {
		t.Fatalf("Journal(99) = %+v, want none", es)
	}
}
