package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// An archived task does not hold its profile: one recorded before
// snapshots is given one first. A live task does, and gets none.
func TestProfileRemovalSparesArchivedTasksWithASnapshot(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		phase    records.Phase
		snapshot bool
		blocks   bool
	}{
		{"archived with snapshot", records.PhaseArchived, true, false},
		{"archived, recorded before snapshots", records.PhaseArchived, false, false},
		{"live, recorded before snapshots", records.PhaseReady, false, true},
		{"live with snapshot", records.PhaseReady, true, true},
		{"cleanup pending with snapshot", records.PhaseCleanupPending, true, true},
		{"absent", records.PhaseAbsent, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestExecutor(t)
			if _, err := e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile)); err != nil {
				t.Fatal(err)
			}
			task := records.Task{ID: "tsnap", Host: "prod", Profile: "web", Phase: c.phase}
			if c.snapshot {
				task.ProfileSnapshot = &records.ProfileSnapshot{WorkdirRoot: "~/kandev", Shell: "sh", Env: []profiles.EnvEntry{}}
			}
			data, _ := json.Marshal(task)
			if _, err := e.cfg.Store.Create(ctx, records.KindTask, task.ID, data, state.Event{Type: "test"}); err != nil {
				t.Fatal(err)
			}
			err := e.RemoveProfile(ctx, "web", false)
			var inUse *InUseError
			if got := errors.As(err, &inUse); got != c.blocks || (!c.blocks && err != nil) {
				t.Fatalf("remove: %v, want blocked %v", err, c.blocks)
			}
		})
	}
}

// Teardown runs the snapshot when the task has one, whatever the profile
// says now or whether it still exists; without one, the profile.
func TestTeardownProfile(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	if _, err := e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile+"cleanup_script: echo now\n")); err != nil {
		t.Fatal(err)
	}
	launched, _, err := records.Get[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, "web")
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshotOf(launched, "/srv/kandev")
	launched.CleanupScript, launched.ReclaimTaskDir = "echo then", true
	if snap.CleanupScript != "echo now" || snap.ReclaimTaskDir || len(snap.Env) != 3 || snap.WorkdirRoot != "/srv/kandev" {
		t.Fatalf("snapshot %+v shares or misses the profile's fields", snap)
	}
	withSnap := &records.Task{ID: "tsnap", Host: "prod", Profile: "web", ProfileSnapshot: snap}
	if err := e.RemoveProfile(ctx, "web", true); err != nil {
		t.Fatal(err)
	}
	p, err := e.teardownProfile(ctx, withSnap)
	want := &profiles.Profile{Name: "web", Host: "prod", WorkdirRoot: "/srv/kandev", Shell: snap.Shell, Env: snap.Env, CleanupScript: "echo now"}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Fatalf("teardown profile: %+v, %v; want %+v", p, err, want)
	}
	old := &records.Task{ID: "told", Host: "prod", Profile: "web"}
	if _, err := e.teardownProfile(ctx, old); !errors.As(err, new(*records.NotFoundError)) {
		t.Fatalf("a task without a snapshot reads its profile: %v", err)
	}
}

// `profile rm` gives an archived task recorded before snapshots one of
// the profile it removes, journaled on the task, and the task's teardown
// then runs it with the profile gone.
func TestProfileRemovalSnapshotsAnOldArchivedTask(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	if _, err := e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile+"cleanup_script: echo old\nreclaim_task_dir: true\n")); err != nil {
		t.Fatal(err)
	}
	profile, _, err := records.Get[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, "web")
	if err != nil {
		t.Fatal(err)
	}
	// As a build before snapshots wrote it: no profile_snapshot key at all.
	data := []byte(`{"id":"told","profile":"web","host":"prod","workdir_root":"/srv/old","phase":"archived"}`)
	if _, err := e.cfg.Store.Create(ctx, records.KindTask, "told", data, state.Event{Type: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveProfile(ctx, "web", false); err != nil {
		t.Fatalf("remove: %v", err)
	}
	task, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, "told")
	if err != nil {
		t.Fatal(err)
	}
	if want := snapshotOf(profile, "/srv/old"); !reflect.DeepEqual(task.ProfileSnapshot, want) {
		t.Fatalf("snapshot %+v, want %+v", task.ProfileSnapshot, want)
	}
	p, err := e.teardownProfile(ctx, task)
	if err != nil || p.CleanupScript != "echo old" || !p.ReclaimTaskDir || p.WorkdirRoot != "/srv/old" {
		t.Fatalf("teardown profile without the profile: %+v, %v", p, err)
	}
	entries, err := e.cfg.Store.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, en := range entries {
		d := records.DetailOf(en)
		found = found || en.Type == "task.profile_snapshot" && d.TaskID == "told" && d.Phase == "archived" &&
			strings.Contains(d.Message, "profile rm web")
	}
	if !found {
		t.Fatalf("no task.profile_snapshot event for told in %+v", entries)
	}
}
