package task

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/watch"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// TeardownOptions are `task archive` and `task delete`'s inputs.
type TeardownOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Yes      bool
	Trigger  records.Trigger
	ID       string
	Timeout  time.Duration
	Watch    bool
	Factory  *cmdutil.Factory // for --watch: the view or the stream of what this starts
}

// NewCmdArchive is `task archive ID`.
func NewCmdArchive(f *cmdutil.Factory, runF func(context.Context, *TeardownOptions) error) *cobra.Command {
	return newCmdTeardown(f, runF, records.TriggerArchive, &cobra.Command{
		Use:   "archive ID",
		Short: "End a task: drain its sessions, run the cleanup script, reclaim the directory if the profile opts in",
		Long: `End a task for good. A durable cleanup job is recorded first, then tried at once:
every session is sealed and stopped with a receipt its controller signs, the
profile's cleanup_script runs in the directory, and, when the profile sets
reclaim_task_dir: true, the host proves nothing of value would be lost
(clean checkouts, everything pushed, no stash) and removes the directory.

A drain that cannot be confirmed (host unreachable, controller not answering)
keeps the directory, quarantines the host and leaves the job to retry
(exit 8); ` + "`kandev-exec sweep`" + ` runs due jobs. Archiving twice is one job.`,
	})
}

// NewCmdDelete is `task delete ID`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *TeardownOptions) error) *cobra.Command {
	return newCmdTeardown(f, runF, records.TriggerDelete, &cobra.Command{
		Use:   "delete ID",
		Short: "Archive a task, then forget it once its directory is proven gone",
		Long: `Like archive, then forget the task and its sessions once the directory is
proven absent. When the directory is kept (reclamation disabled, or the host
found something at risk) the task stays archived and delete exits 3 naming
the reason.`,
	})
}

func newCmdTeardown(f *cmdutil.Factory, runF func(context.Context, *TeardownOptions) error, trigger records.Trigger, c *cobra.Command) *cobra.Command {
	opts := &TeardownOptions{IO: f.IO, Executor: f.Executor, Trigger: trigger, Factory: f}
	c.Args = cmdutil.ExactArgs(1, "task "+string(trigger)+" takes one task ID")
	c.ValidArgsFunction = completeTasks(f)
	c.RunE = func(c *cobra.Command, args []string) error {
		s, err := f.Settings()
		if err != nil {
			return err
		}
		opts.ID, opts.JSON, opts.Yes = args[0], s.JSON, s.Yes
		if opts.Timeout <= 0 {
			return cmdutil.FlagErrorf("--timeout must be positive, got %s", opts.Timeout)
		}
		if runF != nil {
			return runF(c.Context(), opts)
		}
		return teardownRun(c.Context(), opts)
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", executor.DefaultTeardownBudget, "bound on this attempt: drain, cleanup script and reclamation together")
	c.Flags().BoolVar(&opts.Watch, "watch", false, "follow it in the live view (a stream of its events without a terminal)")
	return c
}

func teardownRun(ctx context.Context, o *TeardownOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	t, _, err := ex.GetTask(ctx, o.ID)
	if err != nil {
		return err
	}
	question := fmt.Sprintf("%s task %s (%s) on %s? Its sessions are stopped for good.", verbTitle(o.Trigger), t.ID, t.Name, t.Host)
	if err := cmdutil.ConfirmDestructive(o.IO, o.Yes, question, string(o.Trigger)+" task "+t.ID); err != nil {
		return err
	}
	p := cmdutil.NewProgress(o.IO, o.JSON)
	topts := executor.TeardownOptions{Task: t.ID, Trigger: o.Trigger, Budget: o.Timeout, Progress: p.Step}
	if o.Watch {
		return watchTeardown(ctx, o, ex, topts)
	}
	res, err := ex.Teardown(ctx, topts)
	if res != nil && res.Phase == records.PhaseArchived {
		p.Kept() // the last step kept the directory
	} else {
		p.Done(err == nil)
	}
	if o.JSON && res != nil {
		// Pending or failed, the result says where the task stands.
		if werr := cmdutil.WriteJSON(o.IO.Out, res); werr != nil {
			return werr
		}
		return err
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(o.IO.Out, teardownSummary(res, t))
	return nil
}

func verbTitle(t records.Trigger) string {
	if t == records.TriggerDelete {
		return "Delete"
	}
	return "Archive"
}

// teardownSummary is one line a person reads: where the task ended, what
// the drain proved, what became of the directory.
func teardownSummary(r *executor.TeardownResult, t *records.Task) string {
	drain := string(r.Drain)
	if r.Receipt != "" {
		drain += " (receipt " + r.Receipt + ")"
	}
	switch {
	case r.Forgotten:
		return fmt.Sprintf("Deleted task %s on %s: drain %s, directory removed; the task is forgotten", t.ID, t.Host, cmdutil.Dash(drain))
	case r.Phase == records.PhaseAbsent:
		return fmt.Sprintf("Archived task %s on %s: drain %s, directory removed", t.ID, t.Host, drain)
	}
	return fmt.Sprintf("Archived task %s on %s: drain %s, directory kept: %s", t.ID, t.Host, drain, cmdutil.SafeText(r.Reason))
}

// watchTeardown runs the teardown while the view (or the stream) follows
// its events from where the journal stood before it began, then ends as
// the teardown did. The stream ends once the teardown has returned and
// its last events are printed: an attempt refused at once, or one that
// only finds the task already gone, may write no task event at all.
func watchTeardown(ctx context.Context, o *TeardownOptions, ex *executor.Executor, topts executor.TeardownOptions) error {
	since, err := watch.JournalEnd(ctx, ex.Store())
	if err != nil {
		return err
	}
	topts.Progress = nil // the view shows the steps
	finished := make(chan struct{})
	var terr error
	go func() {
		defer close(finished)
		_, terr = ex.Teardown(ctx, topts)
	}()
	ferr := watch.Follow(ctx, o.Factory, records.Scope{Task: topts.Task}, since, nil, finished)
	<-finished
	if terr != nil {
		return terr
	}
	return ferr
}
