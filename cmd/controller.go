package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/controller"
)

// newCmdController is the helper side of sessions, run on the remote host
// by the executor; it is hidden because people never type it.
func newCmdController(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:    "controller",
		Short:  "Session controller (runs on the remote host)",
		Hidden: true,
	}
	c.AddCommand(newCmdControllerStart(f), newCmdControllerRun(f),
		newCmdControllerIdentity(f, "probe", "Print the recorded controller's identity", controller.Probe),
		newCmdControllerIdentity(f, "kill", "Stop the recorded controller if it proves ours", controller.KillIfOurs))
	return c
}

func newCmdControllerStart(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "start",
		Short:  "Start a detached controller from a JSON request on stdin",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var req controller.StartRequest
			if err := json.NewDecoder(f.IO.In).Decode(&req); err != nil {
				return fmt.Errorf("read start request: %w", err)
			}
			return controller.Start(req, f.IO.Out)
		},
	}
}

func newCmdControllerRun(f *cmdutil.Factory) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:    "run",
		Short:  "Run a controller in the foreground (started by `controller start`)",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdutil.RequireFlags(c, "session-dir"); err != nil {
				return err
			}
			return controller.Run(dir, f.IO.In)
		},
	}
	c.Flags().StringVar(&dir, "session-dir", "", "absolute session directory")
	return c
}

func newCmdControllerIdentity(f *cmdutil.Factory, use, short string, op func(string, uint64) (controller.Identity, error)) *cobra.Command {
	var dir string
	var start uint64
	c := &cobra.Command{
		Use:    use,
		Short:  short,
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdutil.RequireFlags(c, "session-dir", "start-time"); err != nil {
				return err
			}
			id, err := op(dir, start)
			if errors.Is(err, os.ErrNotExist) {
				// No pid file: the session dir is gone, and a controller
				// whose dir is gone stops itself. Nothing alive to prove.
				id, err = controller.Identity{}, nil
			}
			if err != nil {
				return err
			}
			return cmdutil.WriteJSON(f.IO.Out, id)
		},
	}
	c.Flags().StringVar(&dir, "session-dir", "", "absolute session directory")
	c.Flags().Uint64Var(&start, "start-time", 0, "start time recorded when the controller started")
	return c
}
