package watch

import (
	"context"
	"time"

	"github.com/kdlbs/kandev-exec/cmd/hostdrain"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/tui"
)

// executorActions runs what the view asks for with the executor: the
// same calls as `host cordon`, `host drain`, `task archive` and `sweep`,
// so a key in the view and the verb on the command line cannot differ.
type executorActions struct {
	ex       *executor.Executor
	childEnv func() ([]string, error) // a drain worker's settings
}

var _ tui.Actions = executorActions{}

func (a executorActions) Cordon(ctx context.Context, host, reason string) error {
	_, err := a.ex.CordonHost(ctx, host, reason)
	return err
}

func (a executorActions) Uncordon(ctx context.Context, host string) error {
	_, err := a.ex.UncordonHost(ctx, host)
	return err
}

// Drain starts the host's background drain worker, as `host drain
// --detach` does, and returns: the view follows its steps in the journal.
func (a executorActions) Drain(ctx context.Context, name string, deadline time.Duration) error {
	env, err := a.childEnv()
	if err != nil {
		return err
	}
	_, err = hostdrain.Start(ctx, a.ex, env, name, deadline)
	return err
}

func (a executorActions) Quarantine(ctx context.Context, host, reason string, ttl time.Duration) error {
	_, err := a.ex.QuarantineHost(ctx, host, reason, ttl)
	return err
}

// Readmit probes the host first, as `host readmit` does: a host that
// still does not answer stays quarantined and the view shows why.
func (a executorActions) Readmit(ctx context.Context, host, reason string) error {
	_, err := a.ex.ReadmitHost(ctx, host, reason)
	return err
}

// Archive runs one attempt now, as `task archive` does; a drain that
// could not be confirmed leaves the job pending, which the view shows.
func (a executorActions) Archive(ctx context.Context, taskID string) error {
	_, err := a.ex.Teardown(ctx, executor.TeardownOptions{Task: taskID, Trigger: records.TriggerArchive})
	return err
}

func (a executorActions) Sweep(ctx context.Context) error {
	_, err := a.ex.Sweep(ctx, 0)
	return err
}
