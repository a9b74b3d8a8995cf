package executor

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
)

// A reclaim's apply goes over the connection its plan dialled: it dials
// nothing. When the host record changed in between, the apply dials
// again. Either way the directory is proven and removed on the host.
func TestReclaimApplyReusesThePlansConnection(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := f.farHost(t)
	archived := func() string {
		t.Helper()
		task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "far", Command: []string{"true"}})
		if err != nil {
			t.Fatalf("launch: %v", err)
		}
		waitState(t, s.SessionDir, controller.StateExited)
		if res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive}); err != nil || res.Phase != records.PhaseArchived {
			t.Fatalf("archive: %+v, %v", res, err)
		}
		return task.TaskDir
	}
	for _, c := range []struct {
		name    string
		between func()
		dials   int64
	}{
		{"unchanged host", func() {}, 0},
		{"host record changed", func() {
			if _, err := f.exec.CordonHost(ctx, "far", "maintenance"); err != nil {
				t.Fatal(err)
			}
		}, 1},
	} {
		dir := archived()
		plan, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "far"})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(plan, func(r ReclaimRow) bool { return r.Path == dir })
		if i < 0 || plan[i].Action != ReclaimRemove {
			t.Fatalf("%s: the plan for %s: %+v", c.name, dir, plan)
		}
		c.between()
		relay.Accepted()
		rows, err := f.exec.ApplyReclaim(ctx, plan[i:i+1], nil)
		if err != nil || len(rows) != 1 || rows[0].Action != ReclaimRemoved {
			t.Fatalf("%s: the reclaim: %+v, %v", c.name, rows, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %s after the reclaim: %v", c.name, dir, err)
		}
		if got := relay.Accepted(); got != c.dials {
			t.Errorf("%s: the apply dialled %d times, want %d", c.name, got, c.dials)
		}
	}
}
