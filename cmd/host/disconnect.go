package host

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// DisconnectOptions are `host disconnect`'s inputs.
type DisconnectOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
}

// NewCmdDisconnect is `host disconnect NAME`, kandev-exec's `ssh -O exit`.
func NewCmdDisconnect(f *cmdutil.Factory, runF func(context.Context, *DisconnectOptions) error) *cobra.Command {
	opts := &DisconnectOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:   "disconnect NAME",
		Short: "Close the connections to a host kept open for reuse (ControlPersist)",
		Long: `When the ssh config asks for connection reuse for a host (ControlMaster
yes/auto/ask/autoask, a ControlPath and a ControlPersist other than no),
the first command to it leaves its connection to a background master
process, and later commands use that connection instead of logging in
again, until it has been idle for ControlPersist. ` + "`host disconnect`" + `
closes those connections now, like ` + "`ssh -O exit`" + `; commands using one lose it.
` + "`host trust --replace`" + `, ` + "`host set`" + ` and ` + "`host rm`" + ` close them too.`,
		Example:           `  kandev-exec host disconnect prod`,
		Args:              cmdutil.ExactArgs(1, "host disconnect needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return disconnectRun(c.Context(), opts)
		},
	}
}

func disconnectRun(ctx context.Context, o *DisconnectOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.CloseMasters(ctx, o.Name)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, res)
	}
	if res.Closed == 0 {
		fmt.Fprintf(o.IO.Out, "No connection to host %s was kept open\n", res.Name)
		return nil
	}
	fmt.Fprintf(o.IO.Out, "Closed %d kept connection(s) to host %s\n", res.Closed, res.Name)
	return nil
}

// NewCmdMaster is the hidden `host master NAME`: the background process
// that holds a host's connection for reuse, started by the executor
// (Config.MasterCommand) with a pipe as descriptor 3 for its readiness.
func NewCmdMaster(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "master NAME",
		Short:  "Hold a host's connection for reuse (started by kandev-exec itself)",
		Hidden: true,
		Args:   cmdutil.ExactArgs(1, "host master needs a NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			ready := os.NewFile(3, "ready")
			if fi, err := ready.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
				return cmdutil.FlagErrorf("host master is started by kandev-exec itself, to keep a host's connection for reuse: set ControlMaster, ControlPath and ControlPersist for the host in your ssh config instead")
			}
			ex, err := f.Executor()
			if err != nil {
				return err
			}
			return ex.RunMaster(c.Context(), args[0], ready, f.IO.ErrOut)
		},
	}
}
