package records

import (
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/state"
)

// KindTask is the store kind of task records.
const KindTask state.Kind = "task"

// Phase is where a task environment is in its life (docs/architecture.md,
// "Lifecycle of a task environment").
type Phase string

const (
	PhaseAllocating Phase = "allocating" // intent recorded, nothing on the host yet
	PhasePreparing  Phase = "preparing"  // task directory being made or checked
	PhaseReady      Phase = "ready"      // prepared; sessions may run
	PhaseDraining   Phase = "draining"   // teardown: stopping every session, with receipts
	PhaseDestroying Phase = "destroying" // teardown: cleanup script, then reclamation
	// PhaseCleanupPending: teardown could not finish (a drain it could not
	// confirm, a failed step); the job retries. Reachable from every live
	// phase, so a writer holding a stale copy can always record it.
	PhaseCleanupPending Phase = "cleanup_pending"
	PhaseArchived       Phase = "archived" // drained and cleaned up; the directory was kept, with a reason
	PhaseAbsent         Phase = "absent"   // the directory is proven gone
)

// Phases lists every phase in lifecycle order.
var Phases = []Phase{PhaseAllocating, PhasePreparing, PhaseReady, PhaseDraining, PhaseDestroying,
	PhaseCleanupPending, PhaseArchived, PhaseAbsent}

// phaseMoves is the one table of task transitions.
var phaseMoves = moves[Phase]{
	PhaseAllocating:     {PhasePreparing, PhaseDraining, PhaseCleanupPending},
	PhasePreparing:      {PhaseReady, PhaseDraining, PhaseCleanupPending},
	PhaseReady:          {PhasePreparing, PhaseDraining, PhaseCleanupPending},
	PhaseDraining:       {PhaseDestroying, PhaseCleanupPending},
	PhaseDestroying:     {PhaseAbsent, PhaseArchived, PhaseCleanupPending},
	PhaseCleanupPending: {PhaseDraining},
	// An archived task's directory is still there: a delete tears down
	// again, and reclaim --apply may remove it (proven gone: absent).
	PhaseArchived: {PhaseDraining, PhaseAbsent},
	PhaseAbsent:   nil,
}

// CanMove reports whether the table allows p -> to.
func (p Phase) CanMove(to Phase) bool { return phaseMoves.allowed(p, to) }

// Live phases may have a directory and sessions on the host.
func (p Phase) Live() bool { return p != PhaseArchived && p != PhaseAbsent }

// Launchable phases take new sessions (launch, resume).
func (p Phase) Launchable() bool {
	return p == PhaseAllocating || p == PhasePreparing || p == PhaseReady
}

// Task is one task environment: a directory on a host and its sessions.
type Task struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Profile     string    `json:"profile"`
	Agent       string    `json:"agent"`
	Host        string    `json:"host"`
	Root        string    `json:"workdir_root"`
	DirName     string    `json:"task_dir_name"`
	TaskDir     string    `json:"task_dir"` // absolute on the host, known once prepared
	Repo        string    `json:"repo"`
	Branch      string    `json:"branch"`
	BaseBranch  string    `json:"base_branch"`
	BaseCommit  string    `json:"base_commit,omitempty"` // what the task branch started from
	Command     string    `json:"command"`               // what resume runs by default
	LaunchEnv   []string  `json:"launch_env"`            // --env K=V literals, replayed on resume
	Phase       Phase     `json:"phase"`
	OperationID string    `json:"operation_id"`
	Error       string    `json:"error"`
	CreatedAt   time.Time `json:"created_at"`
	Sessions    []string  `json:"sessions"`
	// Launcher is the process that created the task: an interrupted
	// launch is told from a running one by it.
	Launcher *state.Holder `json:"launcher,omitempty"`
	// Teardown is what the current or last cleanup job found, kept on the
	// task so that `task show` and a live view need no second read.
	Teardown *Teardown `json:"teardown,omitempty"`
	// Repositories are the checkouts the last prepare was asked to make:
	// what a reclamation of the directory counts as upstream, whatever
	// the checkouts' own config or the host's marker say since.
	Repositories []TaskRepository `json:"repositories,omitempty"`
	// RepoGiven and BaseGiven: the launch's --repo and --branch set Repo
	// and BaseBranch; otherwise they are the profile's, which a resume
	// before any checkout takes again.
	RepoGiven bool `json:"repo_given,omitempty"`
	BaseGiven bool `json:"base_given,omitempty"`
	// TouchedAt: the last exec or shell in it (launches and resumes are
	// its sessions), which puts off its profile's archive_after.
	TouchedAt *time.Time `json:"touched_at,omitempty"`
	// ProfileSnapshot is what teardown needs of the profile, as it was at
	// launch: removing or changing the profile since never breaks an
	// archive or a delete. Tasks recorded before it read the profile.
	ProfileSnapshot *ProfileSnapshot `json:"profile_snapshot,omitempty"`
	// Idempotency is the key the launch was given: a retry with it
	// answers as this launch ended instead of starting another.
	Idempotency *Idempotency `json:"idempotency,omitempty"`
}

// ProfileSnapshot is the part of a profile a task's teardown runs: the
// cleanup script with its shell and environment (references, never
// values), and whether the directory is then removed.
type ProfileSnapshot struct {
	WorkdirRoot    string              `json:"workdir_root"`
	Shell          string              `json:"shell"`
	Env            []profiles.EnvEntry `json:"env"`
	CleanupScript  string              `json:"cleanup_script"`
	ReclaimTaskDir bool                `json:"reclaim_task_dir"`
}

// Idempotency is a launch's key, the request it came with and, once the
// launch ended, how it ended.
type Idempotency struct {
	Key     string         `json:"key"`
	Request string         `json:"request"` // a digest of what was asked: another request with the key is refused
	Outcome *LaunchOutcome `json:"outcome,omitempty"`
}

// LaunchOutcome is how a keyed launch ended, as its command reported it.
type LaunchOutcome struct {
	Exit    int    `json:"exit"`
	Code    string `json:"code,omitempty"` // the error envelope's code
	Message string `json:"message,omitempty"`
	Hint    string `json:"hint,omitempty"`
}

// TaskRepository is one checkout of a task: where it is in the task
// directory ("." for the primary) and the URL it was cloned from.
type TaskRepository struct {
	Path string `json:"path"`
	URL  string `json:"url"`
}

// Move sets the phase if the table allows it.
func (t *Task) Move(to Phase) error {
	if err := checkMove(phaseMoves, "task", t.ID, t.Phase, to); err != nil {
		return err
	}
	t.Phase = to
	return nil
}
