package executor

import (
	"path/filepath"
	"time"

	"github.com/kdlbs/kandev-exec/reclaim"
)

// A confirmed reclaim (--apply --yes, nothing asked between plan and
// apply) sends the apply with the listing: the host removes, as soon as
// it has listed a root, the orphans it can prove alone
// (reclaim.ListAndApply), and the rest of the plan's removals (archived
// tasks, under claims taken here; orphans with agents to stop; young
// ones; what an interrupted removal left) go in a second request, after
// the records are read again, as an unconfirmed apply's do.
//
// What the second read of the records catches, the one turn gets from
// the host: a task recorded here after the records were read (another
// kandev-exec's launch, say) has its directory made after that (a launch
// records its task before any remote side effect). The host takes only
// orphans unchanged for reclaim.ListedMinAge, and only while the records
// are at most reclaim.ListedWindow old: the request says how old they
// were when sent, and the host counts on from its arrival on its own
// monotonic clock, so a root walked late (an earlier root's removals
// waited on an upstream) is only listed. Every younger orphan, and every
// root walked late, goes to the second request, whose fresh records keep
// a live task's directory. The hour then covers only what neither clock
// measures: the request's way from its encoding here to the helper (the
// bootstrap's check, and the helper's upload where it is not cached:
// minutes at worst) and a step of the host's wall clock (a record
// written after the second read is not covered by either path: the
// host's in-use check is what holds those).

// ConfirmedApply makes ReclaimPlan apply with its listing what the
// rows it returns would be applied to: Saved (--plan FILE, nil without)
// and Task (--task) narrow it as RestrictToPlan and the command do.
type ConfirmedApply struct {
	Saved []ReclaimRow
	Task  string
}

// afterConfirmedView runs once a confirmed reclaim read its records for
// a host's listing; tests make a task appear there.
var afterConfirmedView = func() {}

// confirmedViewRead is when those records were read; tests make it
// earlier, as a slow link or a long bootstrap would.
var confirmedViewRead = time.Now

// listApply is what the listing of host removes by itself.
func (c *ConfirmedApply) listApply(host string, view reclaim.LocalView, olderThan time.Duration, minSize int64) *reclaim.ListApply {
	a := &reclaim.ListApply{View: reclaim.LocalView{InstallationID: view.InstallationID, Phases: view.Phases},
		OlderThanSeconds: int64(olderThan / time.Second), MinBytes: minSize, Task: c.Task}
	if c.Saved != nil {
		a.Restricted, a.Only = true, []reclaim.PlannedDir{}
		for _, r := range c.Saved {
			if r.Host == host && r.Action == ReclaimRemove && r.Identity != nil {
				id := *r.Identity
				a.Only = append(a.Only, reclaim.PlannedDir{Path: r.Path, Identity: &id})
			}
		}
	}
	return a
}

// withApplied gives each row the host removed with its listing what was
// done; a result for a directory no row names (moved in between two
// listings of one root) is a row of its own.
func withApplied(rows []ReclaimRow, host, root string, applied []reclaim.Result) []ReclaimRow {
	for _, res := range applied {
		row := ReclaimRow{Host: host, Path: res.Path, TaskID: res.TaskID, Bytes: res.Bytes, AgeSeconds: res.AgeSeconds,
			Root: root, Dir: filepath.Base(res.Path), Identity: res.Identity}
		i := 0
		for i < len(rows) && rows[i].Path != res.Path {
			i++
		}
		if i == len(rows) {
			rows = append(rows, row)
		}
		r := &rows[i]
		r.Action, r.Reason, r.Detail, r.Proof = string(res.Outcome), string(res.Reason), res.Detail, nil
		if res.Outcome == reclaim.Removed {
			r.Proof = proofRecord(res)
		}
	}
	return rows
}
