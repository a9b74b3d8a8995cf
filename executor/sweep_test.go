package executor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// A sweep lists a job that gave up, with its last error, where it left
// its task and its attempts, and does not run it again: the job and the
// task stay as they were.
func TestSweepListsFailedJobs(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	task := records.Task{ID: "tgaveup", Host: "box", Phase: records.PhaseCleanupPending,
		Teardown: &records.Teardown{Trigger: records.TriggerArchive, Drain: records.DrainUnreachable, Reason: "drain unreachable: connection refused"}}
	job := records.CleanupJob{ID: "tgaveup", TaskID: "tgaveup", Host: "box", Trigger: records.TriggerArchive,
		State: records.JobFailed, Attempts: records.MaxAttempts, LastError: "drain unreachable: connection refused"}
	for kind, v := range map[state.Kind]any{records.KindTask: task, records.KindJob: job} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.cfg.Store.Create(ctx, kind, "tgaveup", data, state.Event{Type: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Sweep(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := SweepResult{TaskID: "tgaveup", Host: "box", Trigger: records.TriggerArchive, Phase: records.PhaseCleanupPending,
		Drain: records.DrainUnreachable, Reason: "drain unreachable: connection refused", State: records.JobFailed,
		Attempts: records.MaxAttempts, Error: "drain unreachable: connection refused"}
	if len(res) != 1 || res[0].NextAt != nil || res[0] != want {
		t.Fatalf("sweep: %+v, want %+v", res, want)
	}
	after, rec, err := records.Get[records.CleanupJob](ctx, e.cfg.Store, records.KindJob, job.ID)
	if err != nil || after.State != records.JobFailed || after.Attempts != records.MaxAttempts || rec.Revision != 1 {
		t.Fatalf("the failed job changed: %+v rev %d %v", after, rec.Revision, err)
	}
}
