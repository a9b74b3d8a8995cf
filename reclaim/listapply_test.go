package reclaim

import (
	"context"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
)

// What a listing removes by itself: an orphan of this installation the
// plan removes, named after its task, with no agent in it, holding at
// least MinBytes, unchanged for ListedMinAge, within --task and a saved
// plan (whose identity it is given). Anything else is left to the
// caller's own request.
func TestListApplyTakesOnlyOldOrphansTheCallerWouldRemove(t *testing.T) {
	old := int64(ListedMinAge/time.Second) + 1
	seen, now := &Identity{Dev: 1, Ino: 10}, &Identity{Dev: 1, Ino: 99}
	orphan := Row{Path: "/r/tasks/tabc", Dir: "tabc", TaskID: "tabc", Bytes: 100, AgeSeconds: old, Action: Remove, Reason: Orphan, Identity: now}
	with := func(change func(*Row)) Row { r := orphan; change(&r); return r }
	for _, c := range []struct {
		name  string
		a     ListApply
		e     Entry
		r     Row
		taken bool
		id    *Identity
	}{
		{"an old orphan", ListApply{}, Entry{}, orphan, true, now},
		{"an archived task's", ListApply{}, Entry{}, with(func(r *Row) { r.Reason = Archived }), false, nil},
		{"an interrupted removal", ListApply{}, Entry{}, with(func(r *Row) { r.Reason = Interrupted }), false, nil},
		{"kept by the plan", ListApply{}, Entry{}, with(func(r *Row) { r.Action, r.Reason = Keep, LiveTask }), false, nil},
		{"changed within the hour", ListApply{}, Entry{}, with(func(r *Row) { r.AgeSeconds = old - 2 }), false, nil},
		{"an agent in it", ListApply{}, Entry{Running: []controller.Running{{Session: "s"}}}, orphan, false, nil},
		{"named after another task", ListApply{}, Entry{}, with(func(r *Row) { r.Dir = "tabd"; r.Path = "/r/tasks/tabd" }), false, nil},
		{"too small", ListApply{MinBytes: 101}, Entry{}, orphan, false, nil},
		{"another task than --task", ListApply{Task: "tother"}, Entry{}, orphan, false, nil},
		{"the task of --task", ListApply{Task: "tabc"}, Entry{}, orphan, true, now},
		{"not in the saved plan", ListApply{Restricted: true}, Entry{}, orphan, false, nil},
		{"in the saved plan without an identity", ListApply{Restricted: true, Only: []PlannedDir{{Path: "/r/tasks/tabc"}}}, Entry{}, orphan, false, nil},
		{"in the saved plan", ListApply{Restricted: true, Only: []PlannedDir{{Path: "/r/tasks/tabc", Identity: seen}}}, Entry{}, orphan, true, seen},
	} {
		c.a.View.InstallationID = "iours"
		tg, ok := c.a.target("/r", c.e, c.r)
		if ok != c.taken || ok && (*tg.Identity != *c.id || tg.Dir != c.r.Dir || tg.TaskID != c.r.TaskID || tg.InstallationID != "iours" || !tg.Enabled || tg.Root != "/r") {
			t.Errorf("%s: taken %v (%+v), want %v", c.name, ok, tg, c.taken)
		}
	}
}

// The records' age a listing removes with counts what the caller
// measured up to sending and the time since the request came in (the
// helper reads requests ahead of serving them, so a later root's
// listing waits its turn): either alone may pass ListedWindow.
func TestListApplyCountsTheRecordsAgeFromTheirRead(t *testing.T) {
	window := ListedWindow.Milliseconds()
	for _, c := range []struct {
		name     string
		sent     int64
		received time.Duration
	}{
		{"read long before the send", window + 1, 0},
		{"waited its turn on the host", 0, ListedWindow + time.Second},
		{"both together", window / 2, ListedWindow/2 + time.Second},
	} {
		ctx := Received(context.Background(), time.Now().Add(-c.received))
		if got := (&ListApply{ReadAgeMillis: c.sent}).readAge(ctx); got <= ListedWindow {
			t.Errorf("%s: the records are %s old, within the window (%s)", c.name, got, ListedWindow)
		}
	}
}
