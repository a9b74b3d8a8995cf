package statetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// testFollow: Follow returns what is already there at once, waits for
// what is not, and gives up with ctx.
func testFollow(t *testing.T, s suite) {
	ctx := context.Background()
	epoch, err := s.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, "a", data(`{}`))
	es, err := s.Follow(ctx, epoch, 0)
	if err != nil || len(es) != 1 || es[0].Seq != 1 || es[0].Name != "a" {
		t.Fatalf("Follow(0) = %+v, %v", es, err)
	}
	got := make(chan []state.Entry, 1)
	errs := make(chan error, 1)
	go func() {
		es, err := s.Follow(ctx, epoch, 1)
		got <- es
		errs <- err
	}()
	create(t, s, "b", data(`{}`))
	if es, err := <-got, <-errs; err != nil || len(es) == 0 || es[0].Seq != 2 || es[0].Name != "b" || es[0].Epoch != epoch {
		t.Fatalf("Follow(1) = %+v, %v; want the entry of b", es, err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if es, err := s.Follow(short, epoch, 2); !errors.Is(err, context.DeadlineExceeded) || len(es) != 0 {
		t.Fatalf("Follow with nothing new = %+v, %v; want the deadline", es, err)
	}
}

// testFollowNewEpoch: a follower of another epoch gets the current
// epoch's journal from its start.
func testFollowNewEpoch(t *testing.T, s suite) {
	ctx := context.Background()
	epoch, err := s.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		create(t, s, n, data(`{}`))
	}
	es, err := s.Follow(ctx, epoch+2, 99)
	if err != nil || len(es) != 3 || es[0].Seq != 1 || es[0].Epoch != epoch {
		t.Fatalf("Follow of another epoch = %+v, %v; want the 3 entries of epoch %d", es, err, epoch)
	}
}
