package records

import (
	"context"
	"errors"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// KindSweep is the store kind of the one record that says when a sweep
// last went through the cleanup jobs: `doctor` reads it to tell that no
// timer or cron line runs `sweep` while jobs wait for one.
const KindSweep state.Kind = "sweep"

// sweepName is that record's name.
const sweepName = "last"

// SweepRun is the last sweep that went through every job.
type SweepRun struct {
	ID string    `json:"id"` // the record's name, as every record's data says
	At time.Time `json:"at"`
	// By is the machine that ran it: sweeps of a shared store may run
	// on several.
	By string `json:"by,omitempty"`
	// Ran counts the jobs it ran.
	Ran int `json:"ran"`
}

// RecordSweep records run as the last sweep.
func RecordSweep(ctx context.Context, st state.Store, run SweepRun) error {
	run.ID = sweepName
	for range mutateAttempts {
		_, err := Mutate(ctx, st, KindSweep, sweepName, "sweep.ran", func(x *SweepRun) error {
			*x = run
			return nil
		})
		if !errors.As(err, new(*NotFoundError)) {
			return err
		}
		_, err = Create(ctx, st, KindSweep, sweepName, run, Event("sweep.ran", Detail{}), nil)
		var exists *state.ConflictError
		if !errors.As(err, &exists) {
			return err
		}
		// Another sweep created it first: write over theirs.
	}
	return errors.New("recording the sweep: other writers kept winning")
}

// LastSweep is the last sweep recorded, nil when none ever ran.
func LastSweep(ctx context.Context, st state.Store) (*SweepRun, error) {
	run, _, err := Get[SweepRun](ctx, st, KindSweep, sweepName)
	if errors.As(err, new(*NotFoundError)) {
		return nil, nil
	}
	return run, err
}
