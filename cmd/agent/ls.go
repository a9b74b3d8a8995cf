package agent

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ListOptions are `agent ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
}

// NewCmdList is `agent ls`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List agent presets",
		Args:    cmdutil.ExactArgs(0, "agent ls takes no arguments"),
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
	as, err := ex.ListAgents(ctx)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, as)
	}
	if len(as) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No agent presets yet: kandev-exec agent apply -f FILE.yaml")
		return nil
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCOMMAND\tENV\tREVISION\tUPDATED")
	for _, v := range as {
		a := v.Agent
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", a.Name, strings.Join(a.Command, " "), len(a.Env),
			v.Revision, cmdutil.Ago(v.UpdatedAt))
	}
	return tw.Flush()
}
