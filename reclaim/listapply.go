package reclaim

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// A confirmed reclaim (--apply --yes, no question between plan and
// apply) lists and removes in one call: its listing request carries
// ListApply, and once a root is listed the host plans it (Plan, with the
// caller's records) and removes, each proven as Apply proves it, the
// orphans that need nothing more of the caller: no task here claims them,
// no agent in them is to be stopped first, nothing of an earlier removal
// is to be finished. Everything else the plan removes is left to a
// request of its own, which the caller sends once it has read its
// records again.
//
// Why an orphan changed within ListedMinAge is left too: a task recorded
// after the caller read its records would look like an orphan here (its
// marker names a task the records sent do not hold), and the caller
// reads its records again before that second request to catch it. A
// launch records its task before it makes the task's directory, so such
// a directory was made after the records were read. Its age is this
// host's now, at the walk, less its newest change, so it is at most the
// time from the read to the walk (plus the clocks' disagreement) only if
// the walk is soon after the read: the listing removes only while the
// read is at most ListedWindow old by this host's monotonic clock (the
// caller's measure of the time up to sending, ReadAgeMillis, plus the
// time since this request came in). A root walked later (an earlier
// root's removals took their time, or the host was slow) is only
// listed, and its removals go to the second request. The hour then only
// has to cover what neither clock measures: the request's way here (the
// bootstrap, an upload of the helper) and a step of the host's wall
// clock. A directory changed in the host's
// future counts as changed now, so young.
//
// Each of these removals' proofs takes the listing's walk of its
// directory as its own (Target.listed) while the directory's top is as
// listed (listedWalk): the proof then began at the listing, before the
// directory's lock was taken, which only gives the recheck after the
// rename more to compare. Whatever was changed since the listing (by a
// preparation that held the lock meanwhile too) moved an entry's change
// time, which nothing sets back, so the recheck keeps the directory; the
// git checks read the checkout as it is during the proof, and a file
// changed before they read it is such a change. Only .kandev/'s own
// entry is taken as it is once the lock is held, since the lock's note
// changed its times: its notes are ours, and each other entry in it is
// compared from the listing on.

// ListApply asks a listing to remove what the caller's plan would
// remove and this call can prove alone.
type ListApply struct {
	// View: the caller's records, read once it was connected.
	View LocalView `json:"view"`
	// OlderThanSeconds and MinBytes are the plan's --older-than and
	// --min-size.
	OlderThanSeconds int64 `json:"older_than_seconds,omitempty"`
	MinBytes         int64 `json:"min_bytes,omitempty"`
	// Restricted: only the directories Only names may go, each as that
	// entry's Identity (when set) says the saved plan saw it.
	Restricted bool         `json:"restricted,omitempty"`
	Only       []PlannedDir `json:"only,omitempty"`
	// Task: only the directory whose marker names this task.
	Task string `json:"task,omitempty"`
	// ReadAgeMillis: how long before sending the caller read View.
	ReadAgeMillis int64 `json:"read_age_ms"`
}

// PlannedDir is a directory a saved plan marked for removal.
type PlannedDir struct {
	Path     string    `json:"path"`
	Identity *Identity `json:"identity,omitempty"`
}

// ListedMinAge: a listing's own removal takes only orphans unchanged for
// this long (see above); younger ones wait for the caller's second look.
const ListedMinAge = time.Hour

// ListedWindow bounds the age of the records a listing removes with, as
// the caller and this host measure it (see above).
const ListedWindow = 2 * time.Minute

type receivedKey struct{}

// Received notes on ctx when the request it serves came in: the helper
// reads requests ahead of serving them, and a listing's window counts
// from its arrival.
func Received(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, receivedKey{}, at)
}

// readAge is how old the caller's records are now: what it measured up
// to sending, and the time since the request came in (since now, served
// as it came, without Received).
func (a *ListApply) readAge(ctx context.Context) time.Duration {
	at, ok := ctx.Value(receivedKey{}).(time.Time)
	if !ok {
		at = time.Now()
	}
	return time.Duration(a.ReadAgeMillis)*time.Millisecond + time.Since(at)
}

// ListAndApply lists req.Root and, when req.Apply asks, removes what it
// selects (Listing.Applied: one result per directory it tried).
func ListAndApply(ctx context.Context, req ListRequest) (*Listing, error) {
	l, err := List(ctx, req)
	if err != nil || req.Apply == nil {
		return l, err
	}
	a := req.Apply
	if a.readAge(ctx) > ListedWindow {
		return l, nil // walked too long after the read: listed only
	}
	var targets []Target
	for i, r := range Plan(*l, a.View, time.Duration(a.OlderThanSeconds)*time.Second) {
		if t, ok := a.target(l.Root, l.Entries[i], r); ok {
			targets = append(targets, t)
		}
	}
	for i := range l.Entries {
		l.Entries[i].walked = nil // the targets hold theirs
	}
	if len(targets) == 0 {
		return l, nil
	}
	rep, err := Apply(ctx, Request{Targets: targets, Parallelism: req.Parallelism})
	if err != nil {
		return nil, err
	}
	l.Applied = rep.Results
	return l, nil
}

// target is the removal of e, planned as r, when this call may try it.
func (a *ListApply) target(root string, e Entry, r Row) (Target, bool) {
	switch {
	case r.Action != Remove || r.Reason != Orphan: // an archived task: under its claim, taken by the caller
	case !NamedAfterItsTask(r), len(e.Running) > 0: // agents: stopped, proven, first
	case r.Bytes < a.MinBytes, r.AgeSeconds < int64(ListedMinAge/time.Second):
	case a.Task != "" && r.TaskID != a.Task:
	default:
		id := r.Identity
		if a.Restricted {
			i := slices.IndexFunc(a.Only, func(p PlannedDir) bool { return p.Path == r.Path })
			if i < 0 || a.Only[i].Identity == nil {
				return Target{}, false
			}
			id = a.Only[i].Identity
		}
		return Target{Root: root, Dir: r.Dir, InstallationID: a.View.InstallationID, TaskID: r.TaskID, Identity: id, Enabled: true,
			listed: e.walked}, true
	}
	return Target{}, false
}

// NamedAfterItsTask: kandev-exec names every directory after its task,
// so a marker naming another was copied or renamed by hand.
func NamedAfterItsTask(r Row) bool { return r.Dir == r.TaskID }

// maxKeptBytes bounds what the walks a listing keeps for its removals
// hold, as keptSize counts it; the directories past it are walked again
// by their proofs.
const maxKeptBytes = 64 << 20

// keptSize is about what a walk kept takes of memory: each entry (with
// the slack of the slice it grew in) and its path.
func keptSize(tr tree) int64 {
	const entryBytes = 96
	n := int64(0)
	for _, e := range tr.entries {
		n += entryBytes + int64(len(e.rel))
	}
	return n
}

// keptForApply keeps the walks of the directories a listing may remove
// itself, as far as the listing can tell (no problem, a marker, no
// agent, old enough), while maxKeptBytes allows.
func keptForApply() func(Entry, tree) bool {
	var kept atomic.Int64
	return func(e Entry, tr tree) bool {
		if e.Problem != "" || e.Interrupted || e.Marker == nil || len(e.Running) > 0 || e.AgeSeconds < int64(ListedMinAge/time.Second) {
			return false
		}
		n := keptSize(tr)
		if kept.Add(n) > maxKeptBytes {
			kept.Add(-n)
			return false
		}
		return true
	}
}

// listedWalk is the listing's walk of d (nil: none) as the proof's own,
// when d's top is still as listed, entry for entry (nothing added,
// removed or renamed in it, not another directory on the same inode),
// else nil: a walk of its own is due. .kandev/ is taken as it is now,
// under the lock, whose note changed its times since the listing, as a
// walk now would see it: from here on it is compared as strictly as
// ever, and what is in it is compared entry by entry from the listing.
func listedWalk(listed *tree, d *dirFD) *tree {
	if listed == nil || len(listed.entries) == 0 || listed.entries[0] != entryOf(".", &d.st) {
		return nil
	}
	st, err := d.lstat(metaDir)
	i := slices.IndexFunc(listed.entries, func(e entry) bool { return e.rel == metaDir })
	if err != nil || i < 0 || !isDir(st) || st.Ino != listed.entries[i].ino {
		return listed // changed: the recheck says so
	}
	tr := *listed
	tr.entries = slices.Clone(listed.entries)
	tr.entries[i] = entryOf(metaDir, &st)
	return &tr
}
