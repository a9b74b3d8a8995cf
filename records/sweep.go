package records

import (
	"context"
	"encoding/json"
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

// RecordSweep records run as the last sweep. A run that ran no job is
// written without a journal entry, where the store can (every backend
// can: state.Copier's ImportRecord): the timer's sweep every 15 minutes
// would otherwise fill the journal, and `watch`, with news of nothing.
func RecordSweep(ctx context.Context, st state.Store, run SweepRun) error {
	run.ID = sweepName
	if c, ok := st.(state.Copier); ok && run.Ran == 0 {
		return recordQuietly(ctx, c, run)
	}
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

// recordQuietly writes run over the sweep record, one revision on,
// journaling nothing. Two quiet sweeps at once may both write the same
// revision: the record only ever says which sweep was last.
func recordQuietly(ctx context.Context, c state.Copier, run SweepRun) error {
	rec, err := c.Get(ctx, KindSweep, sweepName)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return WithRemedy(err)
	}
	data, err := json.Marshal(run)
	if err != nil {
		return err
	}
	return c.ImportRecord(ctx, state.Record{Kind: KindSweep, Name: sweepName, Revision: rec.Revision + 1,
		SchemaVersion: state.SchemaVersion, UpdatedAt: time.Now().UTC(), Data: data})
}

// LastSweep is the last sweep recorded, nil when none ever ran.
func LastSweep(ctx context.Context, st state.Store) (*SweepRun, error) {
	run, _, err := Get[SweepRun](ctx, st, KindSweep, sweepName)
	if errors.As(err, new(*NotFoundError)) {
		return nil, nil
	}
	return run, err
}
