package profile

import (
	"context"
	"fmt"

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
	c := &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove"},
		Short:             "Forget a profile (refused while tasks use it, unless --force)",
		Args:              cmdutil.ExactArgs(1, "profile rm needs a NAME"),
		ValidArgsFunction: completeProfiles(f, 1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			opts.Name, opts.Yes = args[0], s.Yes
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return removeRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Force, "force", false, "remove even while tasks use it, or when its record is unreadable")
	return c
}

func removeRun(ctx context.Context, o *RemoveOptions) error {
	if err := cmdutil.ConfirmRemove(o.IO, o.Yes, "profile", o.Name); err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if err := ex.RemoveProfile(ctx, o.Name, o.Force); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "Removed profile %s\n", o.Name)
	return nil
}
