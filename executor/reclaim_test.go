package executor

import (
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/reclaim"
)

// A saved plan (--plan FILE) narrows a fresh one: only what it marked for
// removal goes, with the identity it saw, so the host keeps a directory
// swapped in since; a row it lacks, or saw without an identity, is kept.
func TestRestrictToPlan(t *testing.T) {
	seen, now := &reclaim.Identity{Dev: 1, Ino: 10}, &reclaim.Identity{Dev: 1, Ino: 99}
	fresh := []ReclaimRow{
		{Host: "h", Path: "/r/tasks/ta", Action: ReclaimRemove, Identity: now},
		{Host: "h", Path: "/r/tasks/tb", Action: ReclaimRemove, Identity: now},
		{Host: "h", Path: "/r/tasks/tc", Action: ReclaimRemove, Identity: now},
		{Host: "h", Path: "/r/tasks/td", Action: ReclaimKeep, Reason: "live_task"},
		{Host: "other", Path: "/r/tasks/ta", Action: ReclaimRemove, Identity: now},
	}
	saved := []ReclaimRow{
		{Host: "h", Path: "/r/tasks/ta", Action: ReclaimRemove, Identity: seen},
		{Host: "h", Path: "/r/tasks/tb", Action: ReclaimRemove},
		{Host: "h", Path: "/r/tasks/tc", Action: ReclaimKeep, Identity: now},
		{Host: "h", Path: "/r/tasks/td", Action: ReclaimRemove, Identity: now},
	}
	got := RestrictToPlan(fresh, saved)
	want := []struct{ action, reason string }{
		{ReclaimRemove, ""}, {ReclaimKeep, ReasonNotInPlan}, {ReclaimKeep, ReasonNotInPlan}, {ReclaimKeep, "live_task"}, {ReclaimKeep, ReasonNotInPlan},
	}
	for i, w := range want {
		if got[i].Action != w.action || got[i].Reason != w.reason {
			t.Errorf("row %d (%s %s): %s %s, want %s %s", i, got[i].Host, got[i].Path, got[i].Action, got[i].Reason, w.action, w.reason)
		}
	}
	if *got[0].Identity != *seen {
		t.Errorf("the saved identity was not kept: %+v", got[0].Identity)
	}
	if fresh[0].Identity != now || fresh[1].Action != ReclaimRemove {
		t.Error("the fresh plan was changed in place")
	}
}

// A candidate whose marker names another task than its directory was
// copied or renamed by hand: kept, whatever its marker says.
func TestPlanRowKeepsAMarkerNamingAnotherDirectory(t *testing.T) {
	r := planRow("h", "/r", reclaim.Row{Path: "/r/tasks/t..x", Dir: "t..x", TaskID: "tabc", Action: reclaim.Remove, Reason: reclaim.Orphan})
	if r.Action != ReclaimKeep || r.Reason != string(reclaim.ForeignMarker) {
		t.Fatalf("got %s %s", r.Action, r.Reason)
	}
	r = planRow("h", "/r", reclaim.Row{Path: "/r/tasks/tabc", Dir: "tabc", TaskID: "tabc", Action: reclaim.Remove, Reason: reclaim.Orphan})
	if r.Action != ReclaimRemove || r.Root != "/r" || r.Dir != "tabc" {
		t.Fatalf("got %+v", r)
	}
}

// A leftover named as an interrupted removal's but with no marker
// names no task: the plan keeps it as what it is, with what to run, and
// never as a marker naming another task.
func TestPlanRowKeepsAnUnmarkedLeftoverAsOne(t *testing.T) {
	l := reclaim.Listing{Root: "/r", Entries: []reclaim.Entry{{Name: ".reclaim.tabc", Dir: "tabc", Interrupted: true, OnlyDirs: true, AgeSeconds: 1 << 20}}}
	r := planRow("h", "/r", reclaim.Plan(l, reclaim.LocalView{InstallationID: "i"}, 0)[0])
	if r.Action != ReclaimKeep || r.Reason != string(reclaim.UnmarkedLeftover) || !strings.Contains(r.Detail, "`find /r/tasks/.reclaim.tabc -type d -empty -delete`") {
		t.Fatalf("got %s %s: %s", r.Action, r.Reason, r.Detail)
	}
}
