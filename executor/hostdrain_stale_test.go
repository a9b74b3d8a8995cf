package executor

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// cutRenewals is a store whose claim renewals fail once cut: the holder
// is cut off from it (a partition, a process frozen past its TTL) while
// its other calls still go through.
type cutRenewals struct {
	state.Store
	cut atomic.Bool
}

func (s *cutRenewals) RenewClaim(ctx context.Context, c state.Claim) (state.Claim, error) {
	if s.cut.Load() {
		return state.Claim{}, errors.New("cut off from the store")
	}
	return s.Store.RenewClaim(ctx, c)
}

// A drain worker cut off mid-drain, its claim expired and taken by
// another worker, writes nothing more: no step on the host, no session
// stopped; it ends with the loss, and the new worker finishes the drain.
// (The old worker recorded a step saying the session was not stopped,
// after its claim had gone to another.)
func TestDrainWorkerThatLostItsClaimWritesNothing(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.ClaimTTL = keepTTL
	st := &cutRenewals{Store: f.open(t).cfg.Store}
	cfgA := f.cfg
	cfgA.Store, cfgA.StateDir = st, f.state
	a, b := New(cfgA), f.open(t)
	if _, err := a.BeginHostDrain(ctx, "prod", time.Now().Add(time.Hour), "/log", 0); err != nil {
		t.Fatal(err)
	}

	atStop, resume := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.RunHostDrain(ctx, "prod", func(line string) {
			if strings.HasSuffix(line, ": stopping") && !st.cut.Load() {
				// Cut off right before stopping the session.
				st.cut.Store(true)
				close(atStop)
				<-resume
			}
		})
		done <- err
	}()
	select {
	case <-atStop:
	case err := <-done:
		t.Fatalf("the first worker ended before stopping the session: %v", err)
	}
	// a's claim runs out; b's worker takes the drain over.
	var held *records.Held
	for i := 0; held == nil; i++ {
		held, err = b.claimDrain(ctx, "prod", 0)
		var claimed *state.ClaimedError
		if err != nil && (!errors.As(err, &claimed) || i > 600) {
			t.Fatalf("taking the drain over: %v", err)
		}
		if held == nil {
			time.Sleep(50 * time.Millisecond) // polling for the claim's expiry
		}
	}
	lost, err := b.cfg.Store.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	lossSeq := lost[len(lost)-1].Seq
	close(resume)
	err = <-done
	var stale *state.StaleClaimError
	if !errors.As(err, &stale) {
		t.Fatalf("the cut-off worker ended with %v, want its claim's loss", err)
	}
	after, err := b.cfg.Store.Journal(ctx, lossSeq)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range after {
		t.Errorf("written after the worker lost its claim: seq %d %s %s/%s %s", en.Seq, en.Type, en.Kind, en.Name, en.Detail)
	}
	if got, _, err := records.Get[records.Session](ctx, b.cfg.Store, records.KindSession, s.ID); err != nil || got.State != records.SessionRunning {
		t.Fatalf("the session after the stale worker: %+v, %v", got, err)
	}

	// The new worker carries the drain through.
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := b.RunHostDrain(ctx, "prod", nil)
	if err != nil || d.State != records.DrainComplete || len(d.Stopped) != 1 || d.Stopped[0] != s.ID {
		t.Fatalf("the new worker: %+v, %v", d, err)
	}
}
