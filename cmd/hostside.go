package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/helper"
)

// The helper's own commands (`serve`, `controller run`) stay in the CLI,
// so that a build without separate helpers can still serve a host of its
// own platform. People never type them; the helper binary
// (cmd/kandev-exec-helper) answers the same arguments.

func newCmdServe() *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Short:  "Serve one helper request (JSON on stdin, JSON on stdout)",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return hostMain(c, "serve")
		},
	}
}

func newCmdController() *cobra.Command {
	c := &cobra.Command{
		Use:    "controller",
		Short:  "Session controller (runs on the host)",
		Hidden: true,
		Args:   cmdutil.NoArgs,
	}
	var dir string
	run := &cobra.Command{
		Use:    "run",
		Short:  "Run a session controller in the foreground (started by the controller-start request)",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdutil.RequireFlags(c, "session-dir"); err != nil {
				return err
			}
			return hostMain(c, "controller", "run", "--session-dir", dir)
		},
	}
	run.Flags().StringVar(&dir, "session-dir", "", "absolute session directory")
	c.AddCommand(run)
	return c
}

// hostMain runs the helper's entry point with the command's streams.
func hostMain(c *cobra.Command, args ...string) error {
	if code := helper.Main(c.Context(), args, c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr()); code != 0 {
		return &cmdutil.ExitCodeError{Code: code}
	}
	return nil
}
