package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// A launch, a resume, a recovery and a teardown each advance a task under
// its claim (docs/architecture.md, "Claims"): one at a time per task, so
// an archive and a resume fence each other, and a holder that lost its
// claim (it died, or it expired and another process took over) cannot
// write the task any more. Sessions are not claimed: only the task's
// holder creates them.

// taskClaim is the claim this process holds on a task.
type taskClaim struct{ *records.Held }

// update changes the claimed task under the claim.
func (tc *taskClaim) update(ctx context.Context, event string, change func(*records.Task) error) (*records.Task, error) {
	return records.Checkpoint(ctx, tc.Held, event, change)
}

func (tc *taskClaim) release(ctx context.Context) { _ = tc.Release(ctx) }

// DefaultClaimTTL is how long a claim outlives its holder's last sign of
// life. Every operation that holds one renews it every third of that while
// it works (keep), so a holder that died anywhere loses it within the TTL;
// on this machine at once (its pid is provably gone).
const DefaultClaimTTL = time.Minute

func (e *Executor) claimTTL() time.Duration {
	if e.cfg.ClaimTTL > 0 {
		return e.cfg.ClaimTTL
	}
	return DefaultClaimTTL
}

// keep renews h's claim while an operation works. The context it returns
// ends when the claim is lost (it expired, or another process took it
// over), so no step starts, and nothing is written, after the loss; stop
// ends the renewals.
func (e *Executor) keep(ctx context.Context, h *records.Held) (context.Context, func()) {
	c := h.Claim()
	k := state.KeepClaim(ctx, e.cfg.Store, c)
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-k.Lost():
			cancel(&state.StaleClaimError{Kind: c.Kind, Name: c.Name, Reason: fmt.Sprintf("the claim was lost mid-way: %v", k.Err())})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		k.Stop()
		cancel(nil)
	}
}

// TaskBusyError: another process holds the task's claim right now, doing
// what Doing says (exit 10).
type TaskBusyError struct {
	TaskID string
	Doing  string // "launched or resumed", "archived" ...
	Holder state.Holder
}

func (e *TaskBusyError) Error() string {
	return fmt.Sprintf("task %s is being %s by another kandev-exec right now (pid %d on %s, since %s); `kandev-exec task show %s` once it is done",
		e.TaskID, e.Doing, e.Holder.PID, e.Holder.Host, e.Holder.Since.UTC().Format(time.RFC3339), e.TaskID)
}

// claimTask takes the task's claim; another live holder is a
// *TaskBusyError. The caller keeps it (keep) while it works.
func (e *Executor) claimTask(ctx context.Context, id string) (*taskClaim, error) {
	h, err := records.Acquire(ctx, e.cfg.Store, records.KindTask, id, e.claimTTL())
	var ce *state.ClaimedError
	if errors.As(err, &ce) {
		return nil, &TaskBusyError{TaskID: id, Doing: "worked on", Holder: ce.Holder}
	}
	if err != nil {
		return nil, err
	}
	return &taskClaim{h}, nil
}

// createTask stores a new task already claimed, in one transaction with
// the check that its host, profile and agent still exist and that no
// other task has its idempotency key.
func (e *Executor) createTask(ctx context.Context, t *records.Task) (*taskClaim, error) {
	h, err := records.CreateClaimed(ctx, e.cfg.Store, records.KindTask, t.ID, "task."+string(t.Phase), t, e.claimTTL(),
		func(tx state.Tx) error {
			// The key first: a retry of a keyed launch answers as the
			// first one did, whatever name they share.
			if err := checkKeyFree(tx, t); err != nil {
				return err
			}
			if err := checkNameFree(tx, t); err != nil {
				return err
			}
			return checkReferences(tx, t)
		})
	if err != nil {
		return nil, err
	}
	return &taskClaim{h}, nil
}

// lostClaim is err, or the claim's loss when that is what ended ctx: a
// step cut short by it reports the loss (a conflict), not an interruption.
func lostClaim(ctx context.Context, err error) error {
	var stale *state.StaleClaimError
	if err != nil && ctx.Err() != nil && errors.As(context.Cause(ctx), &stale) {
		return stale
	}
	return err
}
