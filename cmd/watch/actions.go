package watch

import (
	"context"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/tui"
)

// executorActions runs what the view asks for with the executor: the
// same code as `host cordon`, `host drain`, `task archive`, `sweep`.
//
// This is the one seam between the view and the executor. The teardown
// verbs are being added to the executor alongside this command; until a
// verb exists its method here says so, and the view shows that as the
// action's failure. Each method is replaced by the executor call when the
// verb lands (nothing else in watch changes).
type executorActions struct{ ex *executor.Executor }

var _ tui.Actions = executorActions{}

func newExecutorActions(ex *executor.Executor) tui.Actions { return executorActions{ex: ex} }

// notAvailable: the executor of this build has no such verb yet.
func notAvailable(verb string) error {
	return fmt.Errorf("%s is not available in this build", verb)
}

func (a executorActions) Cordon(ctx context.Context, host, reason string) error {
	return notAvailable("host cordon")
}

func (a executorActions) Uncordon(ctx context.Context, host string) error {
	return notAvailable("host uncordon")
}

func (a executorActions) Drain(ctx context.Context, host string, deadline time.Duration) error {
	return notAvailable("host drain")
}

func (a executorActions) Quarantine(ctx context.Context, host, reason string, ttl time.Duration) error {
	return notAvailable("host quarantine")
}

func (a executorActions) Readmit(ctx context.Context, host, reason string) error {
	return notAvailable("host readmit")
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
