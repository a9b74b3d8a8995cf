package task

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ExecOptions are `task exec`'s inputs.
type ExecOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	ID       string
	Command  []string
	TTY      bool
}

// NewCmdExec is `task exec [-t] ID -- CMD...`.
func NewCmdExec(f *cmdutil.Factory, runF func(context.Context, *ExecOptions) error) *cobra.Command {
	opts := &ExecOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "exec [-t] ID -- CMD...",
		Short: "Run a command in the task directory; its exit status is passed through",
		Long: `Run a command in the task directory through the profile's login shell.
The directory is checked on the host first: it and every directory above
it must be the login user's (or root's) and writable by nobody else. The
profile's environment is not set. stdout and stderr stay separate and the
exit status is passed through; 255 means the transport failed, as with
ssh(1).

With -t the command gets a terminal on the host, as task shell does: both
streams come back on stdout, the window size follows the local one, and
the local terminal is raw until the command ends. Unlike ssh -t, which
warns and goes on without a terminal, -t without a terminal on stdin is a
usage error (exit 2): a script gets the same behaviour every time.`,
		Args:              cmdutil.CommandArgs(1, true, "a task ID"),
		ValidArgsFunction: completeTasks(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.Command = args[0], args[1:]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return execRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.TTY, "tty", "t", false, "run the command on a terminal allocated on the host (stdin must be a terminal)")
	return c
}

func execRun(ctx context.Context, o *ExecOptions) error {
	if o.TTY {
		tty, err := needTerminal(o.IO, "task exec -t", "drop -t to run the command with plain pipes (stdout and stderr apart)")
		if err != nil {
			return err
		}
		ex, err := o.Executor()
		if err != nil {
			return err
		}
		return exitStatus(tty.run(ctx, ex, o.ID, o.Command, o.IO.Out))
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	return exitStatus(ex.Exec(ctx, o.ID, o.Command, o.IO.In, o.IO.Out, o.IO.ErrOut))
}

// exitStatus makes a remote command's status the CLI's (executor.Exec
// says what code and err mean).
func exitStatus(code int, err error) error {
	if err != nil && code < 0 {
		return err
	}
	if err != nil {
		// The remote status wins over the error's class (255 = transport,
		// as with ssh(1)); the message and hint stay.
		info := cmdutil.Classify(err)
		return cmdutil.WithHint(&cmdutil.ExitCodeError{Code: code, JSON: info.Code, Msg: err.Error()}, info.Hint)
	}
	if code != 0 {
		return &cmdutil.ExitCodeError{Code: code, JSON: "error"}
	}
	return nil
}
