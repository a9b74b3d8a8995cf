package reclaim

import (
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/taskdir"
)

func TestPlan(t *testing.T) {
	old := int64((48 * time.Hour).Seconds())
	entry := func(name string, m *taskdir.Owner, f func(*Entry)) Entry {
		e := Entry{Name: name, Dir: name, Marker: m, Identity: Identity{Dev: 1, Ino: 9}, Bytes: 4096, AgeSeconds: old}
		if f != nil {
			f(&e)
		}
		return e
	}
	listing := Listing{Root: "/srv/kandev", Entries: []Entry{
		entry("t-orphan", ours("task-gone"), nil),
		entry("t-archived", ours("task-arch"), nil),
		entry("t-absent", ours("task-abs"), nil),
		entry("t-live", ours("task-live"), nil),
		entry("t-pending", ours("task-pend"), nil),
		entry("t-young", ours("task-young"), func(e *Entry) { e.AgeSeconds = 60 }),
		entry("t-foreign", &taskdir.Owner{InstallationID: "other", TaskID: "task-x"}, nil),
		entry("t-nomarker", nil, nil),
		entry("t-badmarker", nil, func(e *Entry) { e.MarkerDetail = "owner.json is unreadable" }),
		entry("t-notask", ours(""), nil),
		entry("a;b", nil, func(e *Entry) { e.Dir, e.Problem, e.Detail = "", UnsafePath, "not a task directory name" }),
		entry("t-link", nil, func(e *Entry) { e.Problem, e.Detail = UnsafePath, "is a symbolic link" }),
		entry("t-other-user", ours("task-gone2"), func(e *Entry) { e.Problem, e.Detail = NotPrivate, "is owned by another user" }),
		entry(".reclaim.t-half", ours("task-live"), func(e *Entry) { e.Dir, e.Interrupted = "t-half", true }),
		entry(".reclaim.t-empty", nil, func(e *Entry) { e.Dir, e.Interrupted, e.OnlyDirs = "t-empty", true, true }),
		entry(".reclaim.t-files", nil, func(e *Entry) { e.Dir, e.Interrupted = "t-files", true }),
		entry("t-nogit", ours("task-gone3"), func(e *Entry) { e.NoCheckout, e.Holds = true, []string{"notes.txt"} }),
		entry("t-onlymeta", ours("task-gone4"), func(e *Entry) { e.NoCheckout = true }),
	}}
	view := LocalView{InstallationID: testInstallation, Phases: map[string]string{
		"task-arch": "archived", "task-abs": "absent", "task-live": "ready", "task-pend": "cleanup_pending", "task-young": "archived"}}
	want := []struct {
		action Action
		reason Reason
		detail string
	}{
		{Remove, Orphan, "no local record of task task-gone"},
		{Remove, Archived, "task task-arch is archived"},
		{Remove, Archived, "task task-abs is absent"},
		{Keep, LiveTask, "task task-live is ready"},
		{Keep, LiveTask, "cleanup_pending"},
		{Keep, TooRecent, "less than 24h0m0s"},
		{Keep, ForeignMarker, `installation "other"`},
		{Keep, NoMarker, "no .kandev/owner.json"},
		{Keep, NoMarker, "unreadable"},
		{Keep, NoMarker, "names no task"},
		{Keep, UnsafePath, "not a task directory name"},
		{Keep, UnsafePath, "symbolic link"},
		{Keep, NotPrivate, "another user"},
		{Remove, Interrupted, "stopped halfway"},
		{Keep, UnmarkedLeftover, "it holds only empty directories"},
		{Keep, UnmarkedLeftover, "nothing proves whose it is"},
		{Keep, NotACheckout, "it holds notes.txt; `kandev-exec reclaim --apply --include-uncheckable /srv/kandev/tasks/t-nogit` removes it"},
		{Keep, NotACheckout, "it holds nothing but .kandev/"},
	}
	rows := Plan(listing, view, 24*time.Hour)
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		w := want[i]
		if r.Action != w.action || r.Reason != w.reason || !strings.Contains(r.Detail, w.detail) {
			t.Errorf("%s: %s/%s (%s), want %s/%s with %q", r.Path, r.Action, r.Reason, r.Detail, w.action, w.reason, w.detail)
		}
		if want, e := "/srv/kandev/tasks/"+listing.Entries[i].Name, listing.Entries[i]; r.Path != want || r.Bytes != e.Bytes || r.AgeSeconds != e.AgeSeconds {
			t.Errorf("row %d = %+v, want path %s and the entry's size and age", i, r, want)
		}
	}
	// A candidate carries what Apply's target needs: the directory, the
	// marker's task and the identity the plan saw, so a directory swapped
	// in since is kept.
	if r := rows[0]; r.Dir != "t-orphan" || r.TaskID != "task-gone" || r.Identity == nil || *r.Identity != (Identity{Dev: 1, Ino: 9}) {
		t.Fatalf("candidate row = %+v", r)
	}
}

// Plan never makes a candidate of what is not provably this
// installation's, however old.
func TestPlanNeverOffersForeignOrUnmarked(t *testing.T) {
	v := LocalView{InstallationID: testInstallation}
	for _, m := range []*taskdir.Owner{nil, {InstallationID: "other", TaskID: "t"}, {InstallationID: testInstallation}} {
		l := Listing{Root: "/r", Entries: []Entry{{Name: "t-1", Dir: "t-1", Marker: m, AgeSeconds: 1 << 40}}}
		if rows := Plan(l, v, 0); rows[0].Action != Keep {
			t.Errorf("marker %+v: %+v", m, rows[0])
		}
	}
}

// An age too large for a time.Duration is still old: the comparison is
// in seconds, so it cannot overflow into "too recent".
func TestPlanHugeAgeIsOld(t *testing.T) {
	l := Listing{Root: "/r", Entries: []Entry{{Name: "t-1", Dir: "t-1", Marker: ours("task-1"), AgeSeconds: 1 << 40}}}
	if rows := Plan(l, LocalView{InstallationID: testInstallation}, time.Hour); rows[0].Action != Remove || rows[0].Reason != Orphan {
		t.Fatalf("%+v, want an orphan to remove", rows[0])
	}
}
