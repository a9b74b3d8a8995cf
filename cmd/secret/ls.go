package secret

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/vault"
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
	return cmdutil.NewListCmd(f, "secret", "List secret names and when they were set", &opts.JSON, cmdutil.Seam(opts, runF, listRun))
}

func listRun(ctx context.Context, o *ListOptions) error {
	return cmdutil.ListVerb[vault.Secret]{
		List: func(ex *executor.Executor, ctx context.Context) ([]vault.Secret, error) {
			return ex.Vault().ListSecrets(ctx)
		},
		Empty:  "No secrets yet: kandev-exec secret set NAME < FILE",
		Header: "NAME\tCREATED\tUPDATED",
		Row: func(s vault.Secret) string {
			return fmt.Sprintf("%s\t%s\t%s", s.Name, cmdutil.Ago(s.CreatedAt), cmdutil.Ago(s.UpdatedAt))
		},
	}.Run(ctx, o.IO, o.Executor, o.JSON)
}
