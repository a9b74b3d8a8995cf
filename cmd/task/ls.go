package task

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ListOptions are `task ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Host     string
}

// NewCmdList is `task ls [--host H]`; it reads local state only.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List tasks (newest first)",
		Args:    cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Host, "host", "", "only tasks on this host")
	return c
}

func listRun(ctx context.Context, o *ListOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	ts, err := ex.ListTasks(ctx, o.Host)
	if err != nil {
		return err
	}
	// Local state only: what an interrupted launch left is settled when
	// the records prove it, and named when only the host can tell.
	ts, pending, err := ex.RecoverTasks(ctx, ts, false)
	if err != nil {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s\n", cmdutil.SafeText(err.Error()))
	}
	for _, s := range pending {
		fmt.Fprintf(o.IO.ErrOut, "note: task %s: the launch of session %s was interrupted; `kandev-exec task show %s` asks %s and settles it\n", s.TaskID, s.ID, s.TaskID, s.Host)
	}
	if o.JSON {
		views := make([]View, 0, len(ts))
		for _, t := range ts {
			views = append(views, viewOf(t))
		}
		return cmdutil.WriteJSON(o.IO.Out, views)
	}
	if len(ts) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No tasks yet: kandev-exec task launch --profile P -- CMD")
		return nil
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPROFILE\tHOST\tPHASE\tSESSIONS\tCREATED")
	for _, t := range ts {
		phase := t.Phase
		if t.Error != "" {
			phase += " (launch failed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", t.ID, t.Name, t.Profile, t.Host, phase, len(t.Sessions), cmdutil.Ago(t.CreatedAt))
	}
	return tw.Flush()
}
