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
	return cmdutil.NewRemoveCmd(f, "secret", "Delete a secret's record, then its value files", completeSecrets(f, 1),
		&opts.Name, &opts.Yes, cmdutil.Seam(opts, runF, removeRun))
}

func removeRun(ctx context.Context, o *RemoveOptions) error {
	var users []string
	err := cmdutil.RemoveVerb{Noun: "secret", Name: o.Name, Yes: o.Yes, Remove: func(ex *executor.Executor, ctx context.Context) (err error) {
		users, err = ex.Vault().RemoveSecret(ctx, o.Name)
		return err
	}}.Run(ctx, o.IO, o.Executor)
	if err == nil && len(users) > 0 {
		fmt.Fprintf(o.IO.ErrOut, "warning: still referenced by %s; launches with it fail until `kandev-exec secret set %s`\n",
			strings.Join(users, ", "), o.Name)
	}
	return err
}
