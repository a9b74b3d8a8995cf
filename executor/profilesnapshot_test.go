package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// An archived task that carries its snapshot does not hold its profile;
// one recorded before snapshots (it reads the profile at teardown) and a
// live one do.
func TestProfileRemovalSparesArchivedTasksWithASnapshot(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		phase    records.Phase
		snapshot bool
		blocks   bool
	}{
		{"archived with snapshot", records.PhaseArchived, true, false},
		{"archived, recorded before snapshots", records.PhaseArchived, false, true},
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
