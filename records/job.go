package records

import (
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// KindJob is the store kind of cleanup jobs. A task has at most one,
// named by the task's ID, so asking to archive twice is one job.
const KindJob state.Kind = "job"

// Trigger is what asked for the teardown.
type Trigger string

const (
	TriggerArchive Trigger = "archive" // drain, clean up, reclaim if the profile opts in
	TriggerDelete  Trigger = "delete"  // the same, then forget the task once absent
)

// JobState is where a cleanup job stands. An attempt in progress is the
// claim on the task, not a state: a holder that dies leaves the job due.
type JobState string

const (
	JobPending   JobState = "pending"    // due now
	JobRetryWait JobState = "retry_wait" // an attempt failed; due again at NextAt
	JobSucceeded JobState = "succeeded"  // the task is absent or archived
	JobFailed    JobState = "failed"     // gave up after MaxAttempts; still listed with its last error
	JobCancelled JobState = "cancelled"  // a resume took the task back before the job could finish
)

// JobStates lists every state.
var JobStates = []JobState{JobPending, JobRetryWait, JobSucceeded, JobFailed, JobCancelled}

// jobMoves: asking again (task archive/delete) re-arms a finished,
// failed or cancelled job; only a job that has not finished can be
// cancelled.
var jobMoves = moves[JobState]{
	JobPending:   {JobRetryWait, JobSucceeded, JobFailed, JobCancelled},
	JobRetryWait: {JobPending, JobSucceeded, JobFailed, JobCancelled},
	JobSucceeded: {JobPending},
	JobFailed:    {JobPending},
	JobCancelled: {JobPending},
}

// CanMove reports whether the table allows s -> to.
func (s JobState) CanMove(to JobState) bool { return jobMoves.allowed(s, to) }

// MaxAttempts after which a job is failed.
const MaxAttempts = 8

// backoff is the wait after failed attempt n (1-based); the last value
// repeats.
var backoff = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour,
	3 * time.Hour, 6 * time.Hour, 12 * time.Hour}

// Backoff is how long to wait after failed attempt n (1-based).
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	return backoff[min(n, len(backoff))-1]
}

// CleanupJob is a durable request to tear a task down, stored before any
// remote effect and retried until it succeeds or fails for good.
type CleanupJob struct {
	ID          string     `json:"id"` // the task's ID
	OperationID string     `json:"operation_id"`
	TaskID      string     `json:"task_id"`
	Host        string     `json:"host"`
	Trigger     Trigger    `json:"trigger"`
	State       JobState   `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAt      *time.Time `json:"next_at,omitempty"`
	LastError   string     `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Move sets the state if the table allows it.
func (j *CleanupJob) Move(to JobState) error {
	if err := checkMove(jobMoves, "cleanup job", j.ID, j.State, to); err != nil {
		return err
	}
	j.State = to
	return nil
}

// Due reports whether a sweep at now should run the job.
func (j *CleanupJob) Due(now time.Time) bool {
	switch j.State {
	case JobPending:
		return true
	case JobRetryWait:
		return j.NextAt == nil || !now.Before(*j.NextAt)
	}
	return false
}

// Failed records a failed attempt: retry after the backoff, or failed for
// good after MaxAttempts.
func (j *CleanupJob) Failed(err string, now time.Time) error {
	j.LastError = err
	if j.Attempts >= MaxAttempts {
		j.NextAt = nil
		return j.Move(JobFailed)
	}
	next := now.Add(Backoff(j.Attempts))
	j.NextAt = &next
	return j.Move(JobRetryWait)
}

// DrainOutcome is what draining a task's sessions proved.
type DrainOutcome string

const (
	DrainDrained      DrainOutcome = "drained"       // every controller gave a receipt, or proved its agent ended
	DrainNotAttempted DrainOutcome = "not_attempted" // the store proves no controller ever started
	DrainUnreachable  DrainOutcome = "unreachable"   // could not reach a host or controller that may be running
	DrainUncertain    DrainOutcome = "uncertain"     // reached it, but the stop was not confirmed within the bound
)

// Destroys reports whether the outcome lets teardown destroy anything.
func (d DrainOutcome) Destroys() bool { return d == DrainDrained || d == DrainNotAttempted }

// ReclaimOutcome is what happened to the task directory.
type ReclaimOutcome string

const (
	ReclaimRemoved  ReclaimOutcome = "removed"  // proven gone
	ReclaimSkipped  ReclaimOutcome = "skipped"  // kept, with a reason from a closed set
	ReclaimFailed   ReclaimOutcome = "failed"   // could not finish; retried
	ReclaimDisabled ReclaimOutcome = "disabled" // the profile does not opt in
)

// Teardown steps, in order.
const (
	StepDrain   = "drain"
	StepCleanup = "cleanup_script"
	StepReclaim = "reclaim"
)

// StepHostDrain is a host drain's step, in a host's journal detail.
const StepHostDrain = "host_drain"

// Teardown is what the current or last cleanup job found, kept on the
// task so that `task show` and a live view read one record.
type Teardown struct {
	Trigger       Trigger        `json:"trigger"`
	ClaimID       string         `json:"claim_id,omitempty"`
	Step          string         `json:"step,omitempty"`
	Drain         DrainOutcome   `json:"drain,omitempty"`
	Receipts      []string       `json:"receipts,omitempty"` // short proofs, one per drained session
	CleanupOutput string         `json:"cleanup_output,omitempty"`
	Reclaim       ReclaimOutcome `json:"reclaim,omitempty"`
	Reason        string         `json:"reason,omitempty"`
	// ReclaimRemains is what a removal cut short left, as the host
	// reported it: the next attempt gives it back, and the host finishes
	// that removal only if nothing else is there.
	ReclaimRemains []string `json:"reclaim_remains,omitempty"`
	// Proof: what proved the removed directory safe.
	Proof *ReclaimProof `json:"proof,omitempty"`
}
