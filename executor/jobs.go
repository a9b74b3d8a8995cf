package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// ensureJob stores the task's cleanup job before anything happens on the
// host, or re-arms the one it has: asking twice is one job, and a delete
// after an archive turns the job into a delete.
func (e *Executor) ensureJob(ctx context.Context, t *records.Task, trigger records.Trigger) (*records.CleanupJob, error) {
	now := time.Now().UTC().Truncate(time.Second)
	j := &records.CleanupJob{ID: t.ID, OperationID: newID("op"), TaskID: t.ID, Host: t.Host, Trigger: trigger,
		State: records.JobPending, CreatedAt: now, UpdatedAt: now}
	_, err := records.Create(ctx, e.cfg.Store, records.KindJob, t.ID, j, records.EventFor("job.pending", j), nil)
	var ce *state.ConflictError
	if !errors.As(err, &ce) {
		return j, err
	}
	return records.Mutate(ctx, e.cfg.Store, records.KindJob, t.ID, "job.pending", func(x *records.CleanupJob) error {
		if trigger == records.TriggerDelete {
			x.Trigger = trigger
		}
		switch x.State {
		case records.JobSucceeded, records.JobFailed, records.JobCancelled:
			// Asked again: a fresh run of attempts.
			x.Attempts, x.LastError, x.NextAt = 0, "", nil
			x.OperationID = newID("op")
		}
		x.UpdatedAt = now
		return x.Move(records.JobPending)
	})
}

// runJob runs one attempt of a job under the task's claim and records
// how it ended on the job: succeeded, or failed with its retry time.
func (e *Executor) runJob(ctx context.Context, job *records.CleanupJob, budget time.Duration, progress func(string)) (*TeardownResult, error) {
	deadline := time.Now().Add(budget)
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
	defer cancel()
	tc, err := e.claimTask(ctx, job.TaskID)
	if err != nil {
		return nil, err
	}
	defer tc.release(ctx)
	ctx, stop := e.keep(ctx, tc.Held)
	defer stop()
	// Decided again under the claim: another sweep may have run it since
	// this one listed the jobs.
	if cur, _, err := records.Get[records.CleanupJob](ctx, e.cfg.Store, records.KindJob, job.ID); err != nil {
		return nil, err
	} else if !cur.Due(time.Now()) {
		return nil, &notDueError{job: cur}
	}
	job, err = records.Mutate(ctx, e.cfg.Store, records.KindJob, job.ID, "job.attempt", func(x *records.CleanupJob) error {
		x.Attempts++
		x.UpdatedAt = time.Now().UTC().Truncate(time.Second)
		return nil
	})
	if err != nil {
		return nil, err
	}
	a := &attempt{e: e, tc: tc, job: job, deadline: deadline, progress: progress}
	t, runErr := a.run(ctx)
	runErr = lostClaim(ctx, runErr)
	res := &TeardownResult{TaskID: job.TaskID, Job: job.ID, Attempts: job.Attempts}
	if t != nil {
		res = resultOf(t, job)
	}
	// The attempt's outcome lands on the job whatever ctx says: a job
	// left without it would look like one whose holder died.
	ctx = context.WithoutCancel(ctx)
	if runErr == nil {
		// What earlier attempts left is over: the result says so.
		res.NextAt, res.LastError = nil, ""
		_, err := records.Mutate(ctx, e.cfg.Store, records.KindJob, job.ID, "job.succeeded", func(x *records.CleanupJob) error {
			x.LastError, x.NextAt, x.UpdatedAt = "", nil, time.Now().UTC().Truncate(time.Second)
			return x.Move(records.JobSucceeded)
		})
		return res, err
	}
	failed, err := records.Mutate(ctx, e.cfg.Store, records.KindJob, job.ID, "job.failed", func(x *records.CleanupJob) error {
		x.UpdatedAt = time.Now().UTC().Truncate(time.Second)
		return x.Failed(runErr.Error(), x.UpdatedAt)
	})
	if err != nil {
		return res, errors.Join(runErr, err)
	}
	res.NextAt, res.LastError = failed.NextAt, failed.LastError
	return res, &PendingError{TaskID: job.TaskID, Host: job.Host, Drain: res.Drain, NextAt: failed.NextAt, Err: runErr.Error()}
}

// notDueError: the job was not due any more once its task's claim was
// held (another process ran it meanwhile).
type notDueError struct{ job *records.CleanupJob }

func (e *notDueError) Error() string {
	return fmt.Sprintf("cleanup job of task %s is %s: nothing to do", e.job.TaskID, e.job.State)
}

// SweepResult is one job a sweep looked at: one it ran, or one that gave
// up (failed, not run again: Error is its last error).
type SweepResult struct {
	TaskID   string                 `json:"task_id"`
	Host     string                 `json:"host"`
	Trigger  records.Trigger        `json:"trigger"`
	Ran      bool                   `json:"ran"`
	Phase    records.Phase          `json:"phase"`
	Drain    records.DrainOutcome   `json:"drain"`
	Reclaim  records.ReclaimOutcome `json:"reclaim"`
	Reason   string                 `json:"reason"`
	State    records.JobState       `json:"state"`
	Attempts int                    `json:"attempts"`
	NextAt   *time.Time             `json:"next_at,omitempty"`
	Error    string                 `json:"error,omitempty"`
}

// Sweep runs every due cleanup job once (cron, CI) and lists the failed
// ones without running them: only a new archive or delete re-arms those.
// A job another process is running is left to it; one whose holder died
// is taken over (its claim can be taken). Two sweeps at once fence each
// other by the claim.
func (e *Executor) Sweep(ctx context.Context, budget time.Duration) ([]SweepResult, error) {
	if budget <= 0 {
		budget = DefaultTeardownBudget
	}
	jobs, _, err := records.List[records.CleanupJob](ctx, e.cfg.Store, records.KindJob)
	if err != nil {
		return nil, err
	}
	out := []SweepResult{}
	for _, j := range jobs {
		if j.Trigger == records.TriggerDelete && j.State == records.JobSucceeded {
			// A delete whose directory is gone, cut short while forgetting.
			out = append(out, e.finishDelete(ctx, j))
			continue
		}
		if j.State == records.JobFailed {
			out = append(out, e.failedResult(ctx, j))
			continue
		}
		if !j.Due(time.Now()) {
			continue
		}
		r := SweepResult{TaskID: j.TaskID, Host: j.Host, Trigger: j.Trigger}
		res, err := e.runJob(ctx, j, budget, nil)
		var busy *TaskBusyError
		var notDue *notDueError
		switch {
		case errors.As(err, &busy):
			r.Error = busy.Error()
		case errors.As(err, &notDue):
			// Another sweep ran it meanwhile.
		default:
			r.Ran = true
			if res != nil {
				r.Phase, r.Drain, r.Reclaim, r.Reason = res.Phase, res.Drain, res.Reclaim, res.Reason
			}
			if err != nil {
				r.Error = err.Error()
			}
		}
		if cur, _, gerr := records.Get[records.CleanupJob](ctx, e.cfg.Store, records.KindJob, j.ID); gerr == nil {
			r.State, r.Attempts, r.NextAt = cur.State, cur.Attempts, cur.NextAt
		}
		if r.Ran && j.Trigger == records.TriggerDelete && r.Phase == records.PhaseAbsent {
			if ferr := e.forgetDeleted(ctx, j.TaskID); ferr != nil {
				r.Error = fmt.Sprintf("forgetting the deleted task: %v", ferr)
			}
		}
		out = append(out, r)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	ran := 0
	for _, r := range out {
		if r.Ran {
			ran++
		}
	}
	// Only a pass that went through every job counts for doctor.
	run := records.SweepRun{At: time.Now().UTC().Truncate(time.Second), By: state.Self().Host, Ran: ran}
	return out, records.RecordSweep(ctx, e.cfg.Store, run)
}

// failedResult is a job that gave up, as it stands, with where it left
// its task.
func (e *Executor) failedResult(ctx context.Context, j *records.CleanupJob) SweepResult {
	r := SweepResult{TaskID: j.TaskID, Host: j.Host, Trigger: j.Trigger, State: j.State, Attempts: j.Attempts, Error: j.LastError}
	t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, j.TaskID)
	switch {
	case err == nil:
		r.Phase = t.Phase
		if td := t.Teardown; td != nil {
			r.Drain, r.Reclaim, r.Reason = td.Drain, td.Reclaim, td.Reason
		}
	case !errors.As(err, new(*records.NotFoundError)):
		r.Error += fmt.Sprintf(" (and reading task %s: %v)", j.TaskID, err)
	}
	return r
}

// finishDelete forgets a deleted task whose job succeeded but whose
// records were not all forgotten yet; a task still there must be absent.
func (e *Executor) finishDelete(ctx context.Context, j *records.CleanupJob) SweepResult {
	r := SweepResult{TaskID: j.TaskID, Host: j.Host, Trigger: j.Trigger, State: j.State, Attempts: j.Attempts, Phase: records.PhaseAbsent}
	t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, j.TaskID)
	switch {
	case err == nil && t.Phase != records.PhaseAbsent:
		r.Phase, r.Error = t.Phase, fmt.Sprintf("task %s is %s, not absent: not forgotten", t.ID, t.Phase)
		return r
	case err != nil && !errors.As(err, new(*records.NotFoundError)):
		r.Error = err.Error()
		return r
	}
	r.Ran = true
	if err := e.forgetDeleted(ctx, j.TaskID); err != nil {
		r.Error = fmt.Sprintf("forgetting the deleted task: %v", err)
	}
	return r
}

// Jobs are every task's cleanup job, by task ID.
func (e *Executor) Jobs(ctx context.Context) (map[string]*records.CleanupJob, error) {
	js, _, err := records.List[records.CleanupJob](ctx, e.cfg.Store, records.KindJob)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*records.CleanupJob, len(js))
	for _, j := range js {
		out[j.TaskID] = j
	}
	return out, nil
}

// TaskJob is a task's cleanup job, nil when it has none.
func (e *Executor) TaskJob(ctx context.Context, taskID string) (*records.CleanupJob, error) {
	j, _, err := records.Get[records.CleanupJob](ctx, e.cfg.Store, records.KindJob, taskID)
	if errors.As(err, new(*records.NotFoundError)) {
		return nil, nil
	}
	return j, err
}

// cancelJob cancels a task's cleanup job that has not finished: a resume
// (holding the task's claim) takes the task back, so nothing is drained
// or removed after it.
func (e *Executor) cancelJob(ctx context.Context, taskID string) error {
	_, err := records.Mutate(ctx, e.cfg.Store, records.KindJob, taskID, "job.cancelled", func(x *records.CleanupJob) error {
		if x.State != records.JobPending && x.State != records.JobRetryWait {
			return errSettled
		}
		x.NextAt, x.UpdatedAt = nil, time.Now().UTC().Truncate(time.Second)
		return x.Move(records.JobCancelled)
	})
	if errors.As(err, new(*records.NotFoundError)) {
		return nil
	}
	return ignoreSettled(err)
}
