package reclaim

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/shquote"
)

// LocalView is what the local records say, as far as the planner needs:
// this installation, and the phase of each task it knows; and, for the
// proof, each task's launch repositories.
type LocalView struct {
	InstallationID string                `json:"installation_id"`
	Phases         map[string]string     `json:"phases"`              // task id -> phase
	Upstreams      map[string][]Upstream `json:"upstreams,omitempty"` // task id -> its repositories
}

// endedPhases: a task in one of these is over here, so its directory is
// a candidate. Any other phase, known or not, keeps it.
var endedPhases = map[string]bool{"archived": true, "absent": true}

// Row is one line of the orphan plan.
type Row struct {
	Path       string    `json:"path"`
	Dir        string    `json:"dir,omitempty"` // the task directory name to give Apply
	TaskID     string    `json:"task_id"`       // from the marker; "" when there is none
	Bytes      int64     `json:"bytes"`
	AgeSeconds int64     `json:"age_seconds"`
	Action     Action    `json:"action"` // remove or keep
	Reason     Reason    `json:"reason"`
	Detail     string    `json:"detail,omitempty"`
	Identity   *Identity `json:"identity,omitempty"`
	Holds      []string  `json:"holds,omitempty"` // not_a_checkout: what its top holds besides .kandev/
}

// Plan decides, from a listing and the local records, which directories
// are candidates for removal: this installation's, whose task no live
// local record holds (or is archived), unchanged for at least olderThan,
// and earlier removals of ours cut short. Everything else is reported and
// kept: a foreign marker, none, a bad name, a live task. A candidate is
// still only removed if Apply's full proof allows it. No I/O.
func Plan(l Listing, v LocalView, olderThan time.Duration) []Row {
	rows := make([]Row, 0, len(l.Entries))
	for _, e := range l.Entries {
		r := Row{Path: filepath.Join(l.Root, tasksDir, e.Name), Dir: e.Dir, Bytes: e.Bytes, AgeSeconds: e.AgeSeconds}
		if e.Marker != nil {
			r.TaskID = e.Marker.TaskID
		}
		if e.Identity != (Identity{}) {
			id := e.Identity
			r.Identity = &id
		}
		r.Action, r.Reason, r.Detail = planEntry(e, v, olderThan, r.Path)
		if r.Reason == NotACheckout {
			r.Holds = e.Holds
		}
		rows = append(rows, r)
	}
	return rows
}

func planEntry(e Entry, v LocalView, olderThan time.Duration, path string) (Action, Reason, string) {
	m := e.Marker
	switch {
	case e.Problem != "":
		return Keep, e.Problem, e.Detail
	case m == nil && e.Interrupted && e.MarkerDetail == "":
		return Keep, UnmarkedLeftover, unmarkedLeftoverDetail(path, e.OnlyDirs)
	case m == nil && e.MarkerDetail != "":
		return Keep, NoMarker, e.MarkerDetail
	case m == nil:
		return Keep, NoMarker, fmt.Sprintf("%s has no %s/%s: not made by kandev-exec, or not finished", path, metaDir, markerFile)
	case m.InstallationID != v.InstallationID:
		return Keep, ForeignMarker, fmt.Sprintf("made by installation %q, not this one", m.InstallationID)
	case m.TaskID == "":
		return Keep, NoMarker, fmt.Sprintf("%s/%s/%s names no task", path, metaDir, markerFile)
	case e.Interrupted:
		return Remove, Interrupted, fmt.Sprintf("an earlier removal of task %s's directory stopped halfway", m.TaskID)
	}
	phase, known := v.Phases[m.TaskID]
	switch {
	case known && !endedPhases[phase]:
		return Keep, LiveTask, fmt.Sprintf("task %s is %s here", m.TaskID, phase)
	case e.AgeSeconds < int64(olderThan/time.Second):
		return Keep, TooRecent, fmt.Sprintf("changed %s ago, less than %s", time.Duration(e.AgeSeconds)*time.Second, olderThan)
	case e.NoCheckout:
		return Keep, NotACheckout, fmt.Sprintf("not a git checkout, so nothing proves its files are saved; it holds %s; `kandev-exec reclaim --apply --include-uncheckable %s` removes it",
			HoldsText(e.Holds), shquote.Quote(path))
	case known:
		return Remove, Archived, fmt.Sprintf("task %s is %s", m.TaskID, phase)
	}
	return Remove, Orphan, fmt.Sprintf("no local record of task %s", m.TaskID)
}

// HoldsText says what a directory without a checkout holds.
func HoldsText(holds []string) string {
	if len(holds) == 0 {
		return "nothing but " + metaDir + "/"
	}
	return strings.Join(holds, ", ")
}
