package host

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// exactArgs is cobra.ExactArgs with a usage error that says what is missing.
func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return cmdutil.FlagErrorf("%s (got %d arguments)", msg, len(args))
		}
		return nil
	}
}

// cmdContext is the context for completion callbacks, which cobra runs
// without one of their own.
func cmdContext() context.Context { return context.Background() }
