package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/internal/crashpoint"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Teardown is the end of a task environment (docs/architecture.md,
// "Lifecycle"): a durable cleanup job, stored before anything happens on
// the host, runs attempts under the task's claim: drain every session
// (receipts), then the profile's cleanup script, then reclamation of the
// directory if the profile opts in. Stop is not teardown: nothing else
// seals, drains or removes anything.

// DefaultTeardownBudget bounds one attempt: the drain, the cleanup script
// and the reclamation together. A graceful stop gets min(15 s, a third of
// what is left) of it.
const DefaultTeardownBudget = 2 * time.Minute

// Teardown progress steps.
const (
	StepQueued   = "Recording the cleanup job"
	StepDraining = "Draining sessions"
	StepCleanup  = "Running cleanup script"
	StepReclaim  = "Reclaiming task directory"
)

// TeardownOptions are `task archive` and `task delete`'s inputs.
type TeardownOptions struct {
	Task     string // ID, unique ID prefix, or name
	Trigger  records.Trigger
	Budget   time.Duration // 0: DefaultTeardownBudget
	Progress func(step string)
}

// TeardownResult is what `task archive/delete --json` prints.
type TeardownResult struct {
	TaskID    string                 `json:"task_id"`
	Phase     records.Phase          `json:"phase"`
	Drain     records.DrainOutcome   `json:"drain"`
	Receipt   string                 `json:"receipt"`
	Reclaim   records.ReclaimOutcome `json:"reclaim"`
	Reason    string                 `json:"reason"`
	Job       string                 `json:"job"`
	Attempts  int                    `json:"attempts"`
	NextAt    *time.Time             `json:"next_at,omitempty"`
	LastError string                 `json:"last_error,omitempty"`
	Forgotten bool                   `json:"forgotten"` // delete: the records are gone
}

// PendingError: the attempt could not finish (a drain it could not
// confirm, a host it could not reach, a step that failed); the job
// retries (exit 8).
type PendingError struct {
	TaskID, Host string
	Drain        records.DrainOutcome
	NextAt       *time.Time
	Err          string
}

func (e *PendingError) Error() string {
	msg := fmt.Sprintf("task %s: cleanup pending: %s", e.TaskID, e.Err)
	if e.Drain == records.DrainUnreachable || e.Drain == records.DrainUncertain {
		msg += fmt.Sprintf("; the drain was %s, so the directory is untouched and host %s is quarantined", e.Drain, e.Host)
	}
	if e.NextAt != nil {
		msg += fmt.Sprintf("; the job retries after %s (`kandev-exec sweep` runs it, `kandev-exec task show %s` says where it stands)",
			e.NextAt.UTC().Format(time.RFC3339), e.TaskID)
	} else {
		msg += fmt.Sprintf("; the job gave up after %d attempts: fix the cause, then `kandev-exec task archive %s` again", records.MaxAttempts, e.TaskID)
	}
	return msg
}

// KeptError: a delete drained and cleaned up, but the directory was kept
// (reclamation disabled or skipped), so the task is archived, not
// forgotten (exit 3).
type KeptError struct {
	TaskID, Host, Reason string
	// Disabled: the profile does not set reclaim_task_dir, so no delete
	// removes it; reclaim does, once the directory is proven safe.
	Disabled bool
}

func (e *KeptError) Error() string {
	if e.Disabled {
		return fmt.Sprintf("task %s is archived, not deleted: its directory on %s was kept (%s); `kandev-exec reclaim --host %s --task %s --apply` removes it once the host proves nothing would be lost",
			e.TaskID, e.Host, e.Reason, e.Host, e.TaskID)
	}
	return fmt.Sprintf("task %s is archived, not deleted: its directory on %s was kept (%s); make it safe to remove and run `kandev-exec task delete %s` again, or `kandev-exec reclaim --host %s`",
		e.TaskID, e.Host, e.Reason, e.TaskID, e.Host)
}

// Teardown archives or deletes a task: the job first, then one attempt
// now. An attempt that cannot finish leaves the job to `sweep`.
func (e *Executor) Teardown(ctx context.Context, o TeardownOptions) (*TeardownResult, error) {
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Budget <= 0 {
		o.Budget = DefaultTeardownBudget
	}
	t, _, err := e.GetTask(ctx, o.Task)
	if err != nil {
		return nil, err
	}
	if t.Phase == records.PhaseAbsent && o.Trigger == records.TriggerDelete {
		return e.forgetTask(ctx, t)
	}
	o.Progress(StepQueued)
	job, err := e.ensureJob(ctx, t, o.Trigger)
	if err != nil {
		return nil, err
	}
	res, err := e.runJob(ctx, job, o.Budget, o.Progress)
	var notDue *notDueError
	if errors.As(err, &notDue) {
		// Another process ran the job meanwhile: report where it left
		// the task.
		if t, _, err = e.GetTask(ctx, t.ID); err != nil {
			return nil, err
		}
		res, err = resultOf(t, notDue.job), nil
	}
	var busy *TaskBusyError
	if errors.As(err, &busy) {
		// A launch, resume or another attempt holds the task: the job is
		// recorded and waits for it (a resume that began first calls it
		// off only if it is still to begin when the resume looks).
		return &TeardownResult{TaskID: t.ID, Phase: t.Phase, Job: job.ID, Attempts: job.Attempts},
			&PendingError{TaskID: t.ID, Host: t.Host, NextAt: &job.CreatedAt, Err: busy.Error()}
	}
	if err != nil {
		return res, err
	}
	if o.Trigger == records.TriggerDelete {
		switch res.Phase {
		case records.PhaseAbsent:
			forgot, err := e.forgetTask(ctx, t)
			if err != nil {
				return res, err
			}
			forgot.Drain, forgot.Receipt, forgot.Reclaim, forgot.Reason = res.Drain, res.Receipt, res.Reclaim, res.Reason
			forgot.Job, forgot.Attempts = res.Job, res.Attempts
			return forgot, nil
		case records.PhaseArchived:
			return res, &KeptError{TaskID: t.ID, Host: t.Host, Reason: res.Reason, Disabled: res.Reclaim == records.ReclaimDisabled}
		}
	}
	return res, nil
}

// forgetTask deletes an absent task's records: its sessions, the task,
// then its job, which goes last because it is what lets a sweep finish a
// delete cut short (forgetDeleted).
func (e *Executor) forgetTask(ctx context.Context, t *records.Task) (*TeardownResult, error) {
	if err := e.forgetDeleted(ctx, t.ID); err != nil {
		return nil, err
	}
	return &TeardownResult{TaskID: t.ID, Phase: records.PhaseAbsent, Forgotten: true}, nil
}

// forgetDeleted deletes what is left of a deleted task's records, by
// its ID; each record is gone or not, none half-written.
func (e *Executor) forgetDeleted(ctx context.Context, taskID string) error {
	st := e.cfg.Store
	sessions, _, err := records.List[records.Session](ctx, st, records.KindSession)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		if s.TaskID != taskID {
			continue
		}
		if err := deleteIfPresent(ctx, st, records.KindSession, s.ID, "session.forgotten"); err != nil {
			return err
		}
		_ = e.vault.RemoveToken(s.ID)
	}
	if err := deleteIfPresent(ctx, st, records.KindTask, taskID, "task.forgotten"); err != nil {
		return err
	}
	return deleteIfPresent(ctx, st, records.KindJob, taskID, "job.forgotten")
}

// deleteIfPresent removes a record at the revision read; one already
// gone is not an error.
func deleteIfPresent(ctx context.Context, st state.Store, kind state.Kind, name, event string) error {
	rec, err := st.Get(ctx, kind, name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = st.Delete(ctx, kind, name, rec.Revision, state.Event{Type: event})
	if isNotFound(err) {
		return nil
	}
	if err == nil {
		crashpoint.Hit(event)
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, state.ErrNotFound) }

// resultOf is a teardown result read from the records.
func resultOf(t *records.Task, j *records.CleanupJob) *TeardownResult {
	r := &TeardownResult{TaskID: t.ID, Phase: t.Phase, Job: j.ID, Attempts: j.Attempts, NextAt: j.NextAt, LastError: j.LastError}
	if td := t.Teardown; td != nil {
		r.Drain, r.Reclaim, r.Reason = td.Drain, td.Reclaim, td.Reason
		if n := len(td.Receipts); n > 0 {
			r.Receipt = td.Receipts[n-1]
		}
	}
	return r
}
