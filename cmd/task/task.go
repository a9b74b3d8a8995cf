// Package task holds the `task` verbs: launch, ls, show, resume, exec,
// shell, archive, delete, wait.
package task

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// NewCmdTask is the `task` noun.
func NewCmdTask(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "task", Short: "Launch, inspect, resume and exec into tasks on SSH hosts"}
	c.AddCommand(NewCmdLaunch(f, nil), NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdResume(f, nil), NewCmdExec(f, nil),
		NewCmdShell(f, nil), NewCmdArchive(f, nil), NewCmdDelete(f, nil), NewCmdWait(f, nil))
	return c
}

// View is a task as --json prints it (docs/contract.md, "JSON documents").
type View struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Profile string `json:"profile"`
	Agent   string `json:"agent"`
	Host    string `json:"host"`
	TaskDir string `json:"task_dir"`
	Branch  string `json:"branch"`
	// BaseBranch is what the task branch started from (--branch, else the
	// profile's; empty: the remote's default), at BaseCommit.
	BaseBranch string    `json:"base_branch"`
	BaseCommit string    `json:"base_commit"`
	Phase      string    `json:"phase"`
	CreatedAt  time.Time `json:"created_at"`
	Sessions   []string  `json:"sessions"`
	Error      string    `json:"error"`
	// IdempotencyKey is the key the task was launched with, if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Teardown: what the cleanup job found, and where the job stands.
	Drain   string `json:"drain,omitempty"`
	Receipt string `json:"receipt,omitempty"`
	Reclaim string `json:"reclaim,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// CleanupOutput is the tail of the cleanup script's output, secrets
	// masked on the host (a failed run's tail is in Reason instead).
	CleanupOutput string   `json:"cleanup_output,omitempty"`
	Job           *JobView `json:"job,omitempty"`
	// Proof: what proved the removed directory safe (docs/contract.md).
	Proof *records.ReclaimProof `json:"proof,omitempty"`
	// ArchiveAt: when `sweep` archives it, idle that long (`task ls`,
	// for a profile with archive_after).
	ArchiveAt *time.Time `json:"archive_at,omitempty"`
	// SessionStates: each session's state as recorded (`task show` only),
	// oldest first.
	SessionStates []SessionState `json:"session_states,omitempty"`
	// MaxRuntimeAt is when the latest session's agent is stopped, while it
	// runs bounded by max_runtime.
	MaxRuntimeAt *time.Time `json:"max_runtime_at,omitempty"`
}

// SessionState is one session of a task in `task show --json`.
type SessionState struct {
	ID              string              `json:"id"`
	State           string              `json:"state"`
	ExitCode        *int                `json:"exit_code"`
	StateRecordedAt time.Time           `json:"state_recorded_at"`
	RefreshError    *executor.ErrorView `json:"refresh_error,omitempty"`
	// Observation is what asking the host last found, and ObservedAt when.
	Observation string     `json:"observation,omitempty"`
	ObservedAt  *time.Time `json:"observed_at,omitempty"`
}

// JobView is a task's cleanup job as --json prints it.
type JobView struct {
	// OperationID names the job's run of attempts: asking again while it
	// has not finished keeps it.
	OperationID string     `json:"operation_id"`
	Trigger     string     `json:"trigger"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAt      *time.Time `json:"next_at,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
}

func viewOf(t *records.Task, j *records.CleanupJob) View {
	v := View{ID: t.ID, Name: t.Name, Profile: t.Profile, Agent: t.Agent, Host: t.Host, TaskDir: t.TaskDir,
		Branch: t.Branch, BaseBranch: t.BaseBranch, BaseCommit: t.BaseCommit, Phase: string(t.Phase), CreatedAt: t.CreatedAt, Sessions: t.Sessions, Error: t.Error}
	if v.Sessions == nil {
		v.Sessions = []string{}
	}
	if t.Idempotency != nil {
		v.IdempotencyKey = t.Idempotency.Key
	}
	if td := t.Teardown; td != nil {
		v.Drain, v.Reclaim, v.Reason, v.CleanupOutput, v.Proof = string(td.Drain), string(td.Reclaim), td.Reason, td.CleanupOutput, td.Proof
		if n := len(td.Receipts); n > 0 {
			v.Receipt = td.Receipts[n-1]
		}
	}
	if j != nil {
		v.Job = &JobView{OperationID: j.OperationID, Trigger: string(j.Trigger), State: string(j.State), Attempts: j.Attempts, NextAt: j.NextAt, LastError: j.LastError}
	}
	return v
}

// phaseText is the phase as a table shows it, with what a person needs
// next to it: a failed launch, a pending cleanup's retry.
func phaseText(t *records.Task, j *records.CleanupJob, now time.Time) string {
	phase := string(t.Phase)
	switch {
	case j != nil && j.State == records.JobFailed:
		phase += fmt.Sprintf(" (cleanup failed after %d attempts)", j.Attempts)
	case j != nil && j.State == records.JobRetryWait && j.NextAt != nil:
		phase += fmt.Sprintf(" (attempt %d, retry in %s)", j.Attempts, max(j.NextAt.Sub(now), 0).Round(time.Second))
	case t.Error != "" && t.Phase.Launchable():
		phase += " (launch failed)"
	}
	return phase
}

// completeTasks completes task IDs and names from local state (first
// argument only).
func completeTasks(f *cmdutil.Factory) cobra.CompletionFunc { return cmdutil.CompleteTasks(f, 1) }
