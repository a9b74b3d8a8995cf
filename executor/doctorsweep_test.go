package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// doctor warns when cleanup jobs are due and no sweep has gone through
// them for a day, and only then; a sweep records its pass, so that the
// warning ends once a timer runs it.
func TestDoctorSweepCheck(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	in := DoctorInput{Store: e.cfg.Store}
	now := time.Now().UTC()
	check := func(wantStatus string, wantDetail ...string) {
		t.Helper()
		c := checkSweep(ctx, in, now)
		if c.Name != "sweep" || c.Status != wantStatus {
			t.Fatalf("sweep check: %+v, want status %s", c, wantStatus)
		}
		for _, w := range wantDetail {
			if !strings.Contains(c.Detail, w) {
				t.Fatalf("sweep check: %q does not say %q", c.Detail, w)
			}
		}
	}
	addJob := func(id string, st records.JobState, next *time.Time) {
		t.Helper()
		j := records.CleanupJob{ID: id, TaskID: id, Host: "box", Trigger: records.TriggerArchive, State: st, NextAt: next, Attempts: 1}
		data, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.cfg.Store.Create(ctx, records.KindJob, id, data, state.Event{Type: "test"}); err != nil {
			t.Fatal(err)
		}
	}

	check("ok", "0 cleanup job(s) due; no sweep has ever run")
	later := now.Add(time.Hour)
	addJob("tlater", records.JobRetryWait, &later)
	addJob("tgaveup", records.JobFailed, nil)
	check("ok", "0 cleanup job(s) due; no sweep has ever run")

	// The sweep goes through both (runs neither: one is not due, one gave
	// up) and records its pass.
	if _, err := e.Sweep(ctx, 0); err != nil {
		t.Fatal(err)
	}
	last, err := records.LastSweep(ctx, e.cfg.Store)
	if err != nil || last == nil || last.Ran != 0 || last.By == "" || last.At.Before(now.Truncate(time.Second)) {
		t.Fatalf("last sweep: %+v, %v (swept after %s)", last, err, now)
	}

	past := now.Add(-time.Minute)
	addJob("tdue", records.JobRetryWait, &past)
	check("ok", "1 cleanup job(s) due; the last sweep ran at "+last.At.Format(time.RFC3339)+" on "+last.By)

	if err := records.RecordSweep(ctx, e.cfg.Store, records.SweepRun{At: now.Add(-25 * time.Hour), By: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	check("warn", "1 cleanup job(s) due; the last sweep ran at "+now.Add(-25*time.Hour).Format(time.RFC3339)+" on elsewhere",
		"systemctl --user enable --now kandev-exec-sweep.timer", "`kandev-exec sweep`")

	in.StoreErr = &state.NotFoundError{Kind: "meta", Name: "x"}
	check("warn", "not checked")
}

// With no sweep on record, a due job is warned about at once.
func TestDoctorSweepNeverRan(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	j := records.CleanupJob{ID: "tdue", TaskID: "tdue", Host: "box", Trigger: records.TriggerArchive, State: records.JobPending}
	data, _ := json.Marshal(j)
	if _, err := e.cfg.Store.Create(ctx, records.KindJob, j.ID, data, state.Event{Type: "test"}); err != nil {
		t.Fatal(err)
	}
	c := checkSweep(ctx, DoctorInput{Store: e.cfg.Store}, time.Now())
	if c.Status != "warn" || !strings.Contains(c.Detail, "1 cleanup job(s) due; no sweep has ever run; nothing seems to run") {
		t.Fatalf("sweep check: %+v", c)
	}
}
