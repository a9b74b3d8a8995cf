package host

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// RemoveOptions are `host rm`'s inputs.
type RemoveOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	Name     string
	Yes      bool
	Force    bool
}

// NewCmdRemove is `host rm NAME`.
func NewCmdRemove(f *cmdutil.Factory, runF func(context.Context, *RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: f.IO, Executor: f.Executor}
	c := cmdutil.NewRemoveCmd(f, "host", "Forget a host and its pins (nothing on the host is touched; refused while in use)",
		cmdutil.CompleteNames(f, 1, hostNames), &opts.Name, &opts.Yes, cmdutil.Seam(opts, runF, removeRun))
	c.Flags().BoolVar(&opts.Force, "force", false, "remove even while profiles or tasks use the host, or when its record is unreadable")
	return c
}

func removeRun(ctx context.Context, o *RemoveOptions) error {
	return cmdutil.RemoveVerb{Noun: "host", Name: o.Name, Yes: o.Yes, Question: fmt.Sprintf("Forget host %s and its pinned keys?", o.Name),
		Remove: func(ex *executor.Executor, ctx context.Context) error { return ex.RemoveHost(ctx, o.Name, o.Force) }}.Run(ctx, o.IO, o.Executor)
}
