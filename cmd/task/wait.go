package task

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// WaitOptions are `task wait`'s inputs.
type WaitOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	ID       string
	Timeout  time.Duration
}

// NewCmdWait is `task wait ID|NAME [--timeout D]`: the task's latest
// session, waited for as `session wait` does.
func NewCmdWait(f *cmdutil.Factory, runF func(context.Context, *WaitOptions) error) *cobra.Command {
	opts := &WaitOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:               "wait ID|NAME",
		Short:             "Wait until the agent of a task's latest session has ended, and exit with its status",
		Long:              cmdutil.WaitHelp("the agent of the task's latest session"),
		Example:           `  kandev-exec task wait fix-flaky-test --timeout 30m`,
		Args:              cmdutil.ExactArgs(1, "task wait needs a task ID or name"),
		ValidArgsFunction: completeTasks(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.JSON = args[0], f.JSON()
			if opts.Timeout < 0 {
				return cmdutil.FlagErrorf("--timeout must not be negative, got %s", opts.Timeout)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return waitRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", 0, cmdutil.WaitTimeoutUsage)
	return c
}

func waitRun(ctx context.Context, o *WaitOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	t, _, err := ex.GetTask(ctx, o.ID)
	if err != nil {
		return err
	}
	if len(t.Sessions) == 0 {
		return cmdutil.WithHint(fmt.Errorf("task %s has no session to wait for", t.ID), fmt.Sprintf("`kandev-exec task show %s` says why", t.ID))
	}
	return cmdutil.WaitFor(ctx, o.IO, ex, t.Sessions[len(t.Sessions)-1], o.Timeout, o.JSON)
}
