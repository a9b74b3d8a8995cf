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
	c := &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove"},
		Short:             "Forget a host and its pins (nothing on the host is touched; refused while in use)",
		Args:              cmdutil.ExactArgs(1, "host rm needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
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
	c.Flags().BoolVar(&opts.Force, "force", false, "remove even while profiles or tasks use the host, or when its record is unreadable")
	return c
}

func removeRun(ctx context.Context, o *RemoveOptions) error {
	if !o.Yes {
		if !o.IO.CanPrompt() {
			return cmdutil.FlagErrorf("--yes required to remove host %s when not running interactively", o.Name)
		}
		ok, err := o.IO.Confirm(fmt.Sprintf("Forget host %s and its pinned keys?", o.Name))
		if err != nil {
			return err
		}
		if !ok {
			return cmdutil.ErrInterrupted
		}
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if err := ex.RemoveHost(ctx, o.Name, o.Force); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "Removed host %s\n", o.Name)
	return nil
}
