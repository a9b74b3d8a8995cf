package profile

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// RemoveOptions are `profile rm`'s inputs.
type RemoveOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	Name     string
	Yes      bool
	Force    bool
}

// NewCmdRemove is `profile rm NAME [--force]`.
func NewCmdRemove(f *cmdutil.Factory, runF func(context.Context, *RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: f.IO, Executor: f.Executor}
	c := cmdutil.NewRemoveCmd(f, "profile", "Forget a profile (refused while tasks still need it, unless --force; an archived task keeps what its teardown needs)", completeProfiles(f, 1),
		&opts.Name, &opts.Yes, cmdutil.Seam(opts, runF, removeRun))
	c.Flags().BoolVar(&opts.Force, "force", false, "remove even while tasks use it, or when its record is unreadable")
	return c
}

func removeRun(ctx context.Context, o *RemoveOptions) error {
	return cmdutil.RemoveVerb{Noun: "profile", Name: o.Name, Yes: o.Yes, Remove: func(ex *executor.Executor, ctx context.Context) error {
		return ex.RemoveProfile(ctx, o.Name, o.Force)
	}}.Run(ctx, o.IO, o.Executor)
}
