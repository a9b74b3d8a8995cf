package secret

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ListOptions are `secret ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
}

// NewCmdList is `secret ls`: names and times, never values.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List secret names and when they were set",
		Args:    cmdutil.ExactArgs(0, "secret ls takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), opts)
		},
	}
}

func listRun(ctx context.Context, o *ListOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	ss, err := ex.Vault().ListSecrets(ctx)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, ss)
	}
	if len(ss) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No secrets yet: kandev-exec secret set NAME < FILE")
		return nil
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tUPDATED")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, cmdutil.Ago(s.CreatedAt), cmdutil.Ago(s.UpdatedAt))
	}
	return tw.Flush()
}
