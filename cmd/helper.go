package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// newCmdHelper is the remote side: the uploaded binary runs
// `kandev-exec helper` on the host with one JSON request on stdin and
// answers with one JSON response on stdout. It never touches the local
// store or config, which do not exist on the host.
func newCmdHelper() *cobra.Command {
	return &cobra.Command{
		Use:    "helper",
		Short:  "Serve one remote request (JSON on stdin, JSON on stdout)",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return taskdir.Serve(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}
