// Package secret holds the `secret` verbs: set, ls, rm. Values come from
// stdin or a file, never from argv, and are never printed.
package secret

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// NewCmdSecret is the `secret` noun.
func NewCmdSecret(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "secret",
		Short: "Store secrets that profiles reference as {secret: NAME}",
	}
	c.AddCommand(NewCmdSet(f, nil), NewCmdList(f, nil), NewCmdRemove(f, nil))
	return c
}

func completeSecrets(f *cmdutil.Factory, max int) cobra.CompletionFunc {
	return cmdutil.CompleteNames(f, max, func(ex *executor.Executor, ctx context.Context) ([]string, error) {
		return ex.Vault().SecretNames(ctx)
	})
}
