package task

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
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
	ts, _, err := ex.RecoverTasks(ctx, []*executor.Task{t}, true)
	if err != nil {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s\n", cmdutil.SafeText(err.Error()))
	}
	t = ts[0]
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, viewOf(t))
	}
	w := o.IO.Out
	fmt.Fprintf(w, "id:        %s\nname:      %s\nprofile:   %s\nhost:      %s\n", t.ID, t.Name, t.Profile, t.Host)
	fmt.Fprintf(w, "task dir:  %s\nbranch:    %s\nphase:     %s\ncreated:   %s\n", cmdutil.Safe(t.TaskDir), t.Branch, t.Phase, cmdutil.Ago(t.CreatedAt))
	for _, s := range t.Sessions {
		fmt.Fprintf(w, "session:   %s\n", s)
	}
	if t.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", cmdutil.SafeText(t.Error)) // may quote the host
	}
	return nil
}
