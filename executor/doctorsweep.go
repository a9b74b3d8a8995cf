package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/records"
)

// sweepStale is how long cleanup jobs may wait for a sweep before doctor
// says nothing runs one: the packaged timer and cron line run it every
// 15 minutes.
const sweepStale = 24 * time.Hour

// checkSweep warns when cleanup jobs are due and no sweep has gone
// through them for a day: retries and archive_after then wait for a
// person.
func checkSweep(ctx context.Context, in DoctorInput, now time.Time) Check {
	c := Check{Name: "sweep"}
	if in.StoreErr != nil {
		c.Status, c.Detail = "warn", "not checked: the store could not be opened (its own line says why)"
		return c
	}
	jobs, _, err := records.List[records.CleanupJob](ctx, in.Store, records.KindJob)
	if err != nil {
		c.Status, c.Detail = "fail", err.Error()
		return c
	}
	last, err := records.LastSweep(ctx, in.Store)
	if err != nil {
		c.Status, c.Detail = "fail", err.Error()
		return c
	}
	due := 0
	for _, j := range jobs {
		if j.Due(now) {
			due++
		}
	}
	ran := "no sweep has ever run"
	if last != nil {
		ran = fmt.Sprintf("the last sweep ran at %s", last.At.Format(time.RFC3339))
		if last.By != "" {
			ran += " on " + last.By
		}
	}
	c.Status, c.Detail = "ok", fmt.Sprintf("%d cleanup job(s) due; %s", due, ran)
	if due > 0 && (last == nil || now.Sub(last.At) > sweepStale) {
		c.Status = "warn"
		c.Detail += "; nothing seems to run `kandev-exec sweep`: enable its timer (`systemctl --user enable --now kandev-exec-sweep.timer`) " +
			"or its cron line (README, Scheduled sweeps), or run `kandev-exec sweep` now"
	}
	return c
}
