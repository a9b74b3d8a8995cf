// Package reclaim decides whether a task directory may be deleted and,
// on the host, proves it and removes it. Deleting on a machine we do not
// own cannot be undone, so the proof is the feature: every doubt keeps
// the directory, with a reason from the closed set below.
//
// The package has three parts: the pure decision (Decide, Plan), the host
// half that gathers the evidence and removes (Prove, Apply, List), and the
// types both sides exchange as JSON. The host half runs inside the remote
// helper, so nothing here imports the CLI side.
package reclaim

// Action is a verdict: what the proof allows.
type Action string

const (
	Remove Action = "remove" // proven safe: nothing at risk, ours, unchanged
	Skip   Action = "skip"   // kept on purpose, a correct result with its reason
	Fail   Action = "fail"   // not done this time; the caller retries
	Keep   Action = "keep"   // a plan row that will not be removed (Plan only)
)

// Outcome is what Apply did.
type Outcome string

const (
	Removed Outcome = "removed"
	Skipped Outcome = "skipped"
	Failed  Outcome = "failed"
)

// Reason says why, from a closed set: a skip names what is at risk or
// unproven, a failure what to retry, a plan row why it is a candidate or
// kept.
type Reason string

// Skip reasons: the directory stays, and that is the correct result.
const (
	Disabled            Reason = "disabled"             // reclamation was not enabled for this target
	UnsafePath          Reason = "unsafe_path"          // a bad name or shape, a symbolic link or a non-directory on the path
	NotPrivate          Reason = "not_private"          // an owner or mode on the path lets another user change it
	NoMarker            Reason = "no_marker"            // no readable .kandev/owner.json: not provably ours
	ForeignMarker       Reason = "foreign_marker"       // the marker names another installation or task
	UnmarkedLeftover    Reason = "unmarked_leftover"    // named as an interrupted removal's leftover, with no marker: nothing proves whose it is
	ChangedSincePlan    Reason = "changed_since_plan"   // device and inode differ from the earlier proof
	MountPoint          Reason = "mount_point"          // another filesystem or a bind mount inside it
	NotACheckout        Reason = "not_a_checkout"       // its top is not a git checkout: nothing proves the files are saved
	ProbeFailed         Reason = "probe_failed"         // a probe erred, timed out, could not be parsed or found a forged object: unknown keeps
	UnfinishedOperation Reason = "unfinished_operation" // a rebase, merge, cherry-pick, revert, am or bisect in progress
	DirtyWorktree       Reason = "dirty_worktree"       // modified, staged, deleted or unmerged tracked files
	UntrackedFiles      Reason = "untracked_files"      // files git does not track and does not ignore
	IgnoredFiles        Reason = "ignored_files"        // ignored files outside .kandev/ (a .env, a local config)
	StashPresent        Reason = "stash_present"        // stash entries, which are never pushed
	LinkedWorktree      Reason = "linked_worktree"      // the repository has linked worktrees that removing it would break
	UnpushedCommits     Reason = "unpushed_commits"     // commits, tags or other objects of any ref, reflog or ORIG_HEAD-like file that the upstream's current refs do not have
	UnsafeGitConfig     Reason = "unsafe_git_config"    // the checkout's git config has a key no override neutralises (an include)
	HiddenChanges       Reason = "hidden_changes"       // files git status does not report: in a submodule path with no repository, or marked skip-worktree or assume-unchanged and changed
	BorrowedObjects     Reason = "borrowed_objects"     // a repository elsewhere borrows objects from it (objects/info/alternates)
	FetchFailed         Reason = "fetch_failed"         // the upstream could not be fetched, so nothing proves a commit is there
)

// Failure reasons: nothing was lost, and the caller retries.
const (
	Busy         Reason = "busy"          // another preparation or script holds the task directory's lock
	RemoveFailed Reason = "remove_failed" // a removal step failed; the detail names the paths
	StillPresent Reason = "still_present" // the directory is still there after the removal
	TimedOut     Reason = "timed_out"     // the call's time ran out before this directory was done
	Cancelled    Reason = "cancelled"     // the caller interrupted the call (Ctrl-C) before this directory was done
	// InUse: a process works in it (its working or root directory, an
	// open or mapped file below it), or one of the login user's that
	// could be cannot be inspected.
	InUse Reason = "in_use"
	// ChangedDuringProof: something in it was written, changed or moved
	// after the proof began; it keeps its name and is proven again.
	ChangedDuringProof Reason = "changed_during_proof"
)

// Plan reasons: why a listed directory is a candidate, or why it is kept
// (besides the skip reasons above that a listing can already tell).
const (
	Orphan      Reason = "orphan"      // ours, and no local record knows its task
	Archived    Reason = "archived"    // ours, and its task is archived or absent
	Interrupted Reason = "interrupted" // an earlier removal of ours stopped halfway
	LiveTask    Reason = "live_task"   // its task is still live here
	TooRecent   Reason = "too_recent"  // changed more recently than --older-than
)

// Verdict is the decision for one directory.
type Verdict struct {
	Action Action `json:"action"`
	Reason Reason `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}
