package task

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// ShowOptions are `task show`'s inputs.
type ShowOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	ID       string
}

// NewCmdShow is `task show ID` (a unique prefix is enough).
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:               "show ID",
		Short:             "Show a task",
		Args:              cmdutil.ExactArgs(1, "task show needs a task ID"),
		ValidArgsFunction: completeTasks(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return showRun(c.Context(), opts)
		},
	}
}

func showRun(ctx context.Context, o *ShowOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	t, _, err := ex.GetTask(ctx, o.ID)
	if err != nil {
		return err
	}
	// An interrupted launch is settled here, asking the host if needed; the
	// task is shown either way.
	ts, _, err := ex.RecoverTasks(ctx, []*records.Task{t}, true)
	if err != nil {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s\n", cmdutil.SafeText(err.Error()))
	}
	t = ts[0]
	job, err := ex.TaskJob(ctx, t.ID)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, viewOf(t, job))
	}
	w := o.IO.Out
	fmt.Fprintf(w, "id:        %s\nname:      %s\nprofile:   %s\nhost:      %s\n", t.ID, t.Name, t.Profile, t.Host)
	fmt.Fprintf(w, "task dir:  %s\nbranch:    %s\nphase:     %s\ncreated:   %s\n", cmdutil.Safe(t.TaskDir), t.Branch, phaseText(t, job, time.Now()), cmdutil.Ago(t.CreatedAt))
	for _, s := range t.Sessions {
		fmt.Fprintf(w, "session:   %s\n", s)
	}
	if t.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", cmdutil.SafeText(t.Error)) // may quote the host
	}
	showTeardown(w, viewOf(t, job))
	return nil
}

// showTeardown prints what the cleanup job found and where it stands.
func showTeardown(w io.Writer, v View) {
	if v.Drain != "" {
		drain := v.Drain
		if v.Receipt != "" {
			drain += " (receipt " + v.Receipt + ")"
		}
		fmt.Fprintf(w, "drain:     %s\n", drain)
	}
	if v.Reclaim != "" {
		fmt.Fprintf(w, "directory: %s\n", v.Reclaim)
	}
	if v.Reason != "" {
		fmt.Fprintf(w, "reason:    %s\n", cmdutil.SafeText(v.Reason))
	}
	if j := v.Job; j != nil {
		fmt.Fprintf(w, "cleanup:   %s job, %s, %d attempt(s)", j.Trigger, j.State, j.Attempts)
		if j.NextAt != nil {
			fmt.Fprintf(w, ", next %s", cmdutil.Ago(*j.NextAt))
		}
		fmt.Fprintln(w)
		if j.LastError != "" {
			fmt.Fprintf(w, "last error: %s\n", cmdutil.SafeText(j.LastError))
		}
	}
}
