package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/internal/hostops"
)

// newCmdHostSide keeps the helper's own commands (`serve`, `controller
// run`) in the CLI, so that a build without separate helpers can still
// serve a host of its own platform. People never type them; the helper
// binary (cmd/kandev-exec-helper) answers the same arguments.
func newCmdHostSide(use string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              "Remote side of kandev-exec (runs on the host)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code := hostops.Main(cmd.Context(), append([]string{use}, args...), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			switch code {
			case 0:
				return nil
			case 2:
				return &cmdutil.ExitCodeError{Code: code, JSON: "usage"}
			}
			return &cmdutil.ExitCodeError{Code: code}
		},
	}
}
