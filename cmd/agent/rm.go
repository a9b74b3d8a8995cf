package agent

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// RemoveOptions are `agent rm`'s inputs.
type RemoveOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	Name     string
	Yes      bool
	Force    bool
}

// NewCmdRemove is `agent rm NAME [--force]`.
func NewCmdRemove(f *cmdutil.Factory, runF func(context.Context, *RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: f.IO, Executor: f.Executor}
	c := cmdutil.NewRemoveCmd(f, "agent", "Forget an agent preset (refused while tasks use it, unless --force)", completeAgents(f, 1),
		&opts.Name, &opts.Yes, cmdutil.Seam(opts, runF, removeRun))
	c.Flags().BoolVar(&opts.Force, "force", false, "remove even while tasks use it, or when its record is unreadable")
	return c
}

func removeRun(ctx context.Context, o *RemoveOptions) error {
	return cmdutil.RemoveVerb{Noun: "agent", Name: o.Name, Yes: o.Yes, Remove: func(ex *executor.Executor, ctx context.Context) error {
		return ex.RemoveAgent(ctx, o.Name, o.Force)
	}}.Run(ctx, o.IO, o.Executor)
}
