package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
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

// launchTTL bounds a launch or resume that stops checkpointing: its two
// prepare steps and slack. A holder on this machine that dies loses its
// claim at once (its pid is provably gone).
func launchTTL(p *profiles.Profile) time.Duration { return 2*prepareTimeout(p) + 5*time.Minute }

// recoverTTL bounds a recovery: a dial and a few helper calls.
const recoverTTL = 2 * time.Minute

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

// claimTask takes the task's claim for ttl; another live holder is a
// *TaskBusyError.
func (e *Executor) claimTask(ctx context.Context, id string, ttl time.Duration) (*taskClaim, error) {
	h, err := records.Acquire(ctx, e.cfg.Store, records.KindTask, id, ttl)
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
// the check that its host, profile and agent still exist.
func (e *Executor) createTask(ctx context.Context, t *records.Task, ttl time.Duration) (*taskClaim, error) {
	h, err := records.CreateClaimed(ctx, e.cfg.Store, records.KindTask, t.ID, "task."+string(t.Phase), t, ttl,
		func(tx state.Tx) error { return checkReferences(tx, t) })
	if err != nil {
		return nil, err
	}
	return &taskClaim{h}, nil
}
