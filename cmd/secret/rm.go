package secret

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// RemoveOptions are `secret rm`'s inputs.
type RemoveOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	Name     string
	Yes      bool
}

// NewCmdRemove is `secret rm NAME`.
func NewCmdRemove(f *cmdutil.Factory, runF func(context.Context, *RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove"},
		Short:             "Delete a secret's record, then its value files",
		Args:              cmdutil.ExactArgs(1, "secret rm needs a NAME"),
		ValidArgsFunction: completeSecrets(f, 1),
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
}

func removeRun(ctx context.Context, o *RemoveOptions) error {
	if err := cmdutil.ConfirmRemove(o.IO, o.Yes, "secret", o.Name); err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	users, err := ex.Vault().RemoveSecret(ctx, o.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "Removed secret %s\n", o.Name)
	if len(users) > 0 {
		fmt.Fprintf(o.IO.ErrOut, "warning: still referenced by %s; launches with it fail until `kandev-exec secret set %s`\n",
			strings.Join(users, ", "), o.Name)
	}
	return nil
}
