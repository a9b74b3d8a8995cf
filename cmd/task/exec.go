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
}

// NewCmdExec is `task exec ID -- CMD...`.
func NewCmdExec(f *cmdutil.Factory, runF func(context.Context, *ExecOptions) error) *cobra.Command {
	opts := &ExecOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:   "exec ID -- CMD...",
		Short: "Run a command in the task directory; its exit status is passed through",
		Long: `Run a command in the task directory through the profile's login shell.
stdout and stderr stay separate and the exit status is passed through;
255 means the transport failed, as with ssh(1).`,
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
}

func execRun(ctx context.Context, o *ExecOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	code, err := ex.Exec(ctx, o.ID, o.Command, o.IO.In, o.IO.Out, o.IO.ErrOut)
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
