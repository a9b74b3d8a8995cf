package task

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ShellOptions are `task shell`'s inputs.
type ShellOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	ID       string
}

// NewCmdShell is `task shell ID`.
func NewCmdShell(f *cmdutil.Factory, runF func(context.Context, *ShellOptions) error) *cobra.Command {
	opts := &ShellOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:   "shell ID",
		Short: "Open an interactive login shell in the task directory",
		Long: `Open the profile's shell as an interactive login shell in the task directory,
on a terminal allocated on the host: $TERM and the window size go along, and
so does every resize. The local terminal is in raw mode while the shell runs
(Ctrl-C goes to the host) and is restored however it ends. The shell's exit
status is the command's; 255 means the transport failed, as with ssh(1).

As with task exec, the directory is checked on the host first and the
profile's environment is not set.

Stdin must be a terminal; without one this is a usage error (exit 2):
task exec ID -- CMD runs a command with plain pipes instead.`,
		Args:              cmdutil.ExactArgs(1, "task shell needs a task ID"),
		ValidArgsFunction: completeTasks(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return shellRun(c.Context(), opts)
		},
	}
}

func shellRun(ctx context.Context, o *ShellOptions) error {
	tty, err := needTerminal(o.IO, "task shell", fmt.Sprintf("run it from a terminal; `kandev-exec task exec %s -- CMD` runs a command without one", o.ID))
	if err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	return exitStatus(tty.run(ctx, ex, o.ID, nil, o.IO.Out))
}
