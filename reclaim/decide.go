package reclaim

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// Identity is a directory's device and inode as a proof saw them, so a
// later step tells the same directory from one put in its place.
type Identity struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// Target is one task directory to prove or remove.
type Target struct {
	Root           string `json:"root"`            // the physical workdir root
	Dir            string `json:"dir"`             // one segment under <root>/tasks/
	InstallationID string `json:"installation_id"` // the marker must name it
	// TaskID the marker must name; "" accepts any task of the
	// installation (orphans: give Apply the task id the plan found).
	TaskID string `json:"task_id"`
	// Identity from an earlier proof (a plan): anything else there now
	// is changed_since_plan.
	Identity *Identity `json:"identity,omitempty"`
	// Enabled: the profile opted in, or the operator asked. The zero
	// value keeps the directory.
	Enabled bool `json:"enabled"`
	// Upstreams: the repositories the task was launched with, from the
	// local record. A checkout named here counts as pushed only against
	// its URL; any other only against remotes outside the task
	// directories (upstream.go).
	Upstreams []Upstream `json:"upstreams,omitempty"`
	// Uncheckable: the operator named this directory to be removed though
	// its top is not a git checkout (reclaim --include-uncheckable);
	// every other check still holds, nested checkouts' included.
	Uncheckable bool `json:"uncheckable,omitempty"`
	// Remains is what an earlier Apply said its removal, cut short, left
	// behind (Result.Remains), as the caller kept it: that removal is
	// finished only if nothing else is there now. Without it, what is
	// left is proven in full, git included.
	Remains []string `json:"remains,omitempty"`

	// listed is the walk the listing that planned this removal made of
	// the directory (ListAndApply, in the same call).
	listed *tree
}

// Path is where the directory is: <root>/tasks/<dir>.
func (t Target) Path() string { return filepath.Join(t.Root, tasksDir, t.Dir) }

const (
	tasksDir   = "tasks"
	metaDir    = ".kandev"
	markerFile = "owner.json"
)

// Evidence is what the host found about one directory. It holds facts,
// never conclusions: Decide draws those.
type Evidence struct {
	// Absent: neither the directory nor an interrupted removal of it
	// exists below a checked tasks/.
	Absent bool `json:"absent,omitempty"`
	// Interrupted: this is an earlier removal's leftover, renamed out of
	// the way after its proof; its checkouts may be half removed, so
	// only its ownership and identity are checked again.
	Interrupted bool `json:"interrupted,omitempty"`
	// PathProblem is unsafe_path or not_private when the path checks
	// failed, with PathDetail naming the component.
	PathProblem Reason `json:"path_problem,omitempty"`
	PathDetail  string `json:"path_detail,omitempty"`
	// Marker is the directory's owner.json, nil when there is none;
	// MarkerDetail says why it could not be read.
	Marker       *taskdir.Owner `json:"marker,omitempty"`
	MarkerDetail string         `json:"marker_detail,omitempty"`
	Identity     Identity       `json:"identity"`
	// Busy: another preparation or script holds the directory's lock.
	Busy string `json:"busy,omitempty"`
	// WalkError: the tree could not be read in full.
	WalkError string `json:"walk_error,omitempty"`
	// Mounts: mount points at or below the directory.
	Mounts []string `json:"mounts,omitempty"`
	// OnlyDirs: the tree holds nothing but directories.
	OnlyDirs bool `json:"only_dirs,omitempty"`
	// Checkouts in walk order; the primary (Path ".") first when the
	// directory's top is one.
	Checkouts []Checkout `json:"checkouts,omitempty"`
	Bytes     int64      `json:"bytes"`
	// AgeSeconds since the newest change anywhere in the tree.
	AgeSeconds int64 `json:"age_seconds"`
	// LeftAsRemoved: an interrupted removal's leftover holds only what
	// that removal left (the target's Remains), unchanged.
	LeftAsRemoved bool `json:"left_as_removed,omitempty"`
	// InUse names the processes working in the directory; InUseUnknown
	// says why the host could not tell.
	InUse        []string `json:"in_use,omitempty"`
	InUseUnknown string   `json:"in_use_unknown,omitempty"`

	proof manifest // what the walk saw, for the removal to compare
	// sealed: the controllers its sessions' drains sealed, as the proof
	// saw them running, for the recheck after the rename.
	sealed sealedSet
}

// Checkout is what the probes found in one git checkout of a directory.
type Checkout struct {
	Path  string `json:"path"`            // relative to the task directory; "." is its top
	Error string `json:"error,omitempty"` // a probe failed: nothing below is known
	// From git status: tracked changes (staged or not), unmerged paths,
	// untracked and ignored entries, relative to the checkout.
	Changed   []string `json:"changed,omitempty"`
	Unmerged  []string `json:"unmerged,omitempty"`
	Untracked []string `json:"untracked,omitempty"`
	Ignored   []string `json:"ignored,omitempty"`
	// From the gitdir.
	Operation       string   `json:"operation,omitempty"` // what is unfinished, e.g. "a rebase"
	Stash           bool     `json:"stash,omitempty"`
	Worktrees       []string `json:"worktrees,omitempty"`        // other worktrees of this repository
	UnprobedModules []string `json:"unprobed_modules,omitempty"` // submodule repositories with no checkout here
	// Against the upstreams' refs as the proof fetched them.
	Head          string   `json:"head,omitempty"`           // HEAD's commit as the proof saw it
	FetchError    string   `json:"fetch_error,omitempty"`    // an upstream could not be fetched: nothing is proven pushed
	Proofs        []Proof  `json:"proofs,omitempty"`         // what proved each local ref or commit upstream, and how
	FirstUnpushed string   `json:"first_unpushed,omitempty"` // the oldest commit nothing proved upstream
	UnpushedTags  []string `json:"unpushed_tags,omitempty"`  // local tags no remote has at that object
	Unpushed      int      `json:"unpushed,omitempty"`       // commits of HEAD, branches and notes on no remote branch or tag
	UnpushedRefs  []string `json:"unpushed_refs,omitempty"`  // the local refs holding them (with no remote: every ref)
	NoRemote      bool     `json:"no_remote,omitempty"`      // no remote at all: every commit is unpushed
	// What git status cannot say, found by the proof itself.
	UnsafeConfig    string   `json:"unsafe_config,omitempty"`    // a key of its config no override neutralises, and where; nothing else was probed
	Hidden          []string `json:"hidden,omitempty"`           // files git status does not report, each with why
	BorrowedBy      []string `json:"borrowed_by,omitempty"`      // repositories elsewhere whose alternates point into the directory
	UnpushedObjects []string `json:"unpushed_objects,omitempty"` // refs and reflogs naming a tag, tree or blob the remote does not have
	IgnoredRemotes  []string `json:"ignored_remotes,omitempty"`  // remotes of its config that do not count, with why
}

// Decide turns the evidence about t into a verdict. It has no I/O: the
// same facts give the same verdict on both sides of the wire. The order
// matters: the path and ownership come before anything read through
// them, and any doubt keeps the directory.
func Decide(t Target, ev Evidence) Verdict {
	if !t.Enabled {
		return skip(Disabled, "reclamation is not enabled for this task directory (profile reclaim_task_dir: false)")
	}
	if v, bad := checkShape(t); bad {
		return v
	}
	dir := t.Path()
	switch {
	case ev.PathProblem != "":
		return skip(ev.PathProblem, ev.PathDetail)
	case ev.Absent:
		return Verdict{Action: Remove, Detail: dir + " is already absent"}
	}
	if v, bad := checkMarker(t, ev, dir); bad {
		return v
	}
	switch {
	case t.Identity != nil && *t.Identity != ev.Identity:
		return skip(ChangedSincePlan, fmt.Sprintf("%s is not the directory the plan proved (device %d inode %d, planned device %d inode %d); plan again",
			dir, ev.Identity.Dev, ev.Identity.Ino, t.Identity.Dev, t.Identity.Ino))
	case ev.Busy != "":
		return Verdict{Action: Fail, Reason: Busy, Detail: ev.Busy}
	case ev.WalkError != "":
		return skip(ProbeFailed, ev.WalkError)
	case len(ev.Mounts) > 0:
		return skip(MountPoint, fmt.Sprintf("%s holds a mount point (%s); unmount it first", dir, examples(ev.Mounts)))
	}
	// An interrupted removal that left only what it said it left (or
	// nothing but directories) loses nothing more; anything else there
	// is proven like any directory.
	if ev.Interrupted {
		dir = filepath.Join(t.Root, tasksDir, trashName(t.Dir))
	}
	if !ev.Interrupted || !ev.LeftAsRemoved && !ev.OnlyDirs {
		if v, bad := checkCheckouts(dir, ev, t.Uncheckable); bad {
			return v
		}
	}
	switch {
	case len(ev.InUse) > 0:
		return Verdict{Action: Fail, Reason: InUse, Detail: fmt.Sprintf("%s is in use by %s; the removal waits for them to end", dir, examples(ev.InUse))}
	case ev.InUseUnknown != "":
		return skip(ProbeFailed, fmt.Sprintf("%s: which processes use it is unknown: %s", dir, ev.InUseUnknown))
	case ev.Interrupted:
		return Verdict{Action: Remove, Detail: fmt.Sprintf("finishing the interrupted removal of %s", t.Path())}
	}
	return Verdict{Action: Remove, Detail: fmt.Sprintf("%s: %d checkout(s), nothing at risk", dir, len(ev.Checkouts))}
}

// checkCheckouts finds the first thing at risk in the checkouts of the
// directory at dir; a top that is no checkout is at risk unless named.
func checkCheckouts(dir string, ev Evidence, named bool) (Verdict, bool) {
	if !named && (len(ev.Checkouts) == 0 || ev.Checkouts[0].Path != ".") {
		return skip(NotACheckout, fmt.Sprintf("%s is not a git checkout, so nothing proves its files are saved", dir)), true
	}
	probed := map[string]bool{}
	for _, c := range ev.Checkouts {
		probed[c.Path] = true
	}
	for _, c := range ev.Checkouts {
		if v, bad := checkCheckout(filepath.Join(dir, c.Path), c, probed); bad {
			return v, true
		}
	}
	return Verdict{}, false
}

// checkShape refuses anything but one valid segment under the clean
// absolute <root>/tasks/, before any path is touched.
func checkShape(t Target) (Verdict, bool) {
	switch {
	case !filepath.IsAbs(t.Root) || filepath.Clean(t.Root) != t.Root:
		return skip(UnsafePath, fmt.Sprintf("workdir root %q is not a clean absolute path", t.Root)), true
	case !taskdir.ValidTaskDir(t.Dir):
		return skip(UnsafePath, fmt.Sprintf("%q is not a task directory name (one segment of [a-z0-9][a-z0-9._-]*)", t.Dir)), true
	}
	return Verdict{}, false
}

// checkMarker proves the directory is this installation's (and, when
// given, this task's).
func checkMarker(t Target, ev Evidence, dir string) (Verdict, bool) {
	m := ev.Marker
	switch {
	case m == nil && ev.Interrupted && ev.MarkerDetail == "":
		return skip(UnmarkedLeftover, unmarkedLeftoverDetail(filepath.Join(t.Root, tasksDir, trashName(t.Dir)), ev.OnlyDirs)), true
	case m == nil && ev.MarkerDetail != "":
		return skip(NoMarker, ev.MarkerDetail), true
	case m == nil:
		return skip(NoMarker, fmt.Sprintf("%s has no %s/%s, so it is not provably ours", dir, metaDir, markerFile)), true
	case m.InstallationID != t.InstallationID:
		return skip(ForeignMarker, fmt.Sprintf("%s belongs to installation %q, not this one (%q)", dir, m.InstallationID, t.InstallationID)), true
	case m.TaskID == "":
		return skip(NoMarker, fmt.Sprintf("%s/%s/%s names no task", dir, metaDir, markerFile)), true
	case t.TaskID != "" && m.TaskID != t.TaskID:
		return skip(ForeignMarker, fmt.Sprintf("%s belongs to task %q, not %q", dir, m.TaskID, t.TaskID)), true
	}
	return Verdict{}, false
}

// checkCheckout finds the first thing at risk in one checkout. Entries
// that are themselves probed checkouts are covered by their own probes,
// and the top checkout's .kandev/ is our own metadata.
func checkCheckout(at string, c Checkout, probed map[string]bool) (Verdict, bool) {
	covered := func(entries []string) []string {
		var left []string
		for _, e := range entries {
			rel := path.Join(c.Path, strings.TrimSuffix(e, "/"))
			if rel != c.Path && probed[rel] {
				continue
			}
			if c.Path == "." && (rel == metaDir || strings.HasPrefix(rel, metaDir+"/")) {
				continue
			}
			left = append(left, e)
		}
		return left
	}
	switch {
	case c.Error != "":
		return skip(ProbeFailed, fmt.Sprintf("%s: %s", at, c.Error)), true
	case c.UnsafeConfig != "":
		return skip(UnsafeGitConfig, fmt.Sprintf("%s: its git configuration has %s, which the proof cannot neutralise, so no git ran there; remove it to let the checkout be proven", at, c.UnsafeConfig)), true
	case c.Operation != "":
		return skip(UnfinishedOperation, fmt.Sprintf("%s: %s is in progress; finish or abort it", at, c.Operation)), true
	case len(c.Unmerged) > 0:
		return skip(DirtyWorktree, fmt.Sprintf("%s: %d unmerged path(s) (%s)", at, len(c.Unmerged), examples(c.Unmerged))), true
	case len(c.Changed) > 0:
		return skip(DirtyWorktree, fmt.Sprintf("%s: %d changed path(s) not committed (%s)", at, len(c.Changed), examples(c.Changed))), true
	}
	if left := covered(c.Untracked); len(left) > 0 {
		return skip(UntrackedFiles, fmt.Sprintf("%s: %d untracked path(s) (%s)", at, len(left), examples(left))), true
	}
	if left := covered(c.Ignored); len(left) > 0 {
		return skip(IgnoredFiles, fmt.Sprintf("%s: %d ignored path(s) outside %s/ (%s)", at, len(left), metaDir, examples(left))), true
	}
	switch {
	case len(c.Hidden) > 0:
		return skip(HiddenChanges, fmt.Sprintf("%s: %d file(s) git status does not report (%s)", at, len(c.Hidden), examples(c.Hidden))), true
	case c.Stash:
		return skip(StashPresent, fmt.Sprintf("%s: the stash holds entries", at)), true
	case len(c.Worktrees) > 0:
		return skip(LinkedWorktree, fmt.Sprintf("%s: the repository has linked worktrees (%s); remove them with `git worktree remove`, or `git worktree prune` if they are gone", at, examples(c.Worktrees))), true
	case len(c.BorrowedBy) > 0:
		return skip(BorrowedObjects, fmt.Sprintf("%s: repositories elsewhere borrow objects from it through objects/info/alternates (%s); run `git repack -a -d` in each and remove its alternates file first", at, examples(c.BorrowedBy))), true
	case len(c.UnprobedModules) > 0:
		return skip(ProbeFailed, fmt.Sprintf("%s: submodule repositories with no checkout here to probe (%s)", at, examples(c.UnprobedModules))), true
	case c.FetchError != "":
		return skip(FetchFailed, fmt.Sprintf("%s: the upstream could not be fetched, so nothing proves its commits are there: %s", at, c.FetchError)), true
	case c.NoRemote && len(c.UnpushedRefs) > 0:
		d := fmt.Sprintf("%s: the repository has commits (%s) and no remote to hold them", at, examples(c.UnpushedRefs))
		if len(c.IgnoredRemotes) > 0 {
			d += fmt.Sprintf("; remotes that do not count: %s", examples(c.IgnoredRemotes))
		}
		return skip(UnpushedCommits, d), true
	case len(c.UnpushedTags) > 0:
		return skip(UnpushedCommits, fmt.Sprintf("%s: tag(s) the remote does not have (%s)", at, examples(c.UnpushedTags))), true
	case len(c.UnpushedObjects) > 0:
		return skip(UnpushedCommits, fmt.Sprintf("%s: ref(s) naming objects the remote does not have (%s)", at, examples(c.UnpushedObjects))), true
	case c.Unpushed > 0:
		d := fmt.Sprintf("%s: %d commit(s) of %s are on no branch or tag of the remote, nor the same change by another commit there (the first: %s)", at, c.Unpushed, examples(c.UnpushedRefs), c.FirstUnpushed)
		if slices.ContainsFunc(c.UnpushedRefs, func(r string) bool { return strings.HasPrefix(r, "logs/") || r == allReflogs }) {
			d += "; commits only in a reflog count too (`git reflog expire --expire-unreachable=now --all` there forgets them)"
		}
		return skip(UnpushedCommits, d), true
	}
	return Verdict{}, false
}

// unmarkedLeftoverDetail says why the leftover at path, named as an
// interrupted removal's but without a marker, is kept, and what to do.
// A removal takes the marker last, so its leftover has none only once
// everything else went: onlyDirs, it holds nothing but empty directories.
// But anything that can write to tasks/ (the agent can) can make such a
// name: nothing proves whose it is, so nothing removes it.
func unmarkedLeftoverDetail(path string, onlyDirs bool) string {
	if onlyDirs {
		return fmt.Sprintf("%s looks like what an earlier removal left once its marker went: it holds only empty directories, but with no %s/%s nothing proves whose it is, so it is kept; check it and remove it by hand on the host (`find %s -type d -empty -delete` removes only empty directories)",
			path, metaDir, markerFile, shquote.Quote(path))
	}
	return fmt.Sprintf("%s is named as an earlier removal's leftover but has no %s/%s, so nothing proves whose it is and it is kept; look at what it holds on the host (`ls -laR %s`) and remove it by hand once it is not needed",
		path, metaDir, markerFile, shquote.Quote(path))
}

func skip(r Reason, detail string) Verdict { return Verdict{Action: Skip, Reason: r, Detail: detail} }

// examples names up to three entries and how many more there are.
func examples(s []string) string {
	const n = 3
	q := make([]string, 0, n)
	for i, e := range s {
		if i == n {
			break
		}
		q = append(q, fmt.Sprintf("%q", e))
	}
	out := strings.Join(q, ", ")
	if len(s) > n {
		out += fmt.Sprintf(" and %d more", len(s)-n)
	}
	return out
}
