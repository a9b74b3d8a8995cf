package session

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ListOptions are `session ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Task     string
}

// NewCmdList is `session ls [--task ID]`, from local state only.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sessions as last recorded (newest first); `session show` asks the host",
		Args:    cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Task, "task", "", "only sessions of this task")
	return c
}

func listRun(ctx context.Context, o *ListOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	ss, err := ex.ListSessions(ctx, o.Task)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, ss)
	}
	if len(ss) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No sessions.")
		return nil
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTASK\tHOST\tSTATE\tEXIT\tPID\tPORT\tSTARTED")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.ID, s.TaskID, s.Host, s.State, exitText(s.ExitCode), s.PID, s.RemotePort, cmdutil.Ago(s.StartedAt))
	}
	return tw.Flush()
}

func exitText(code *int) string {
	if code == nil {
		return "-"
	}
	return fmt.Sprint(*code)
}
