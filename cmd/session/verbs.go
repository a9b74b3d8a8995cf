package session

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// Options are the inputs of the per-session verbs.
type Options struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	ID       string
	Follow   bool
	Spec     string
}

func newVerb(f *cmdutil.Factory, use, short string, nargs int, runF, run func(context.Context, *Options) error, setup func(*cobra.Command, *Options)) *cobra.Command {
	opts := &Options{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              cobra.ExactArgs(nargs),
		ValidArgsFunction: completeSessions(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.JSON = args[0], f.JSON()
			if nargs > 1 {
				opts.Spec = args[1]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return run(c.Context(), opts)
		},
	}
	if setup != nil {
		setup(c, opts)
	}
	return c
}

// NewCmdShow is `session show ID`: asks the host, records what it says.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	return newVerb(f, "show ID", "Ask the host how a session is doing (running, exited, stopped, lost)", 1, runF, showRun, nil)
}

func showRun(ctx context.Context, o *Options) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	s, err := ex.RefreshSession(ctx, o.ID)
	if err != nil {
		return err
	}
	return printSession(o, s)
}

func printSession(o *Options, s *executor.Session) error {
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, s)
	}
	fmt.Fprintf(o.IO.Out, "%s  task %s  %s  exit %s  pid %d  port %d\n", s.ID, s.TaskID, s.State, exitText(s.ExitCode), s.PID, s.RemotePort)
	if s.Error != "" {
		fmt.Fprintf(o.IO.Out, "error: %s\n", s.Error)
	}
	return nil
}

// NewCmdLogs is `session logs ID [-f]`.
func NewCmdLogs(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	return newVerb(f, "logs ID", "Print a session's output; -f follows it until the agent exits", 1, runF, logsRun,
		func(c *cobra.Command, o *Options) {
			c.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep streaming until the agent exits")
		})
}

func logsRun(ctx context.Context, o *Options) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	_, err = ex.StreamLogs(ctx, o.ID, o.Follow, o.IO.Out)
	return err
}

// NewCmdStop is `session stop ID`: graceful, then the process group is
// killed; the task directory stays (resumable).
func NewCmdStop(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	return newVerb(f, "stop ID", "Stop a session's agent (the task directory stays: `task resume`)", 1, runF, stopRun, nil)
}

func stopRun(ctx context.Context, o *Options) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	s, err := ex.StopSession(ctx, o.ID)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, s)
	}
	fmt.Fprintf(o.IO.Out, "Session %s %s (exit %s)\n", s.ID, s.State, exitText(s.ExitCode))
	fmt.Fprintf(o.IO.ErrOut, "The task directory stays: kandev-exec task resume %s\n", s.TaskID)
	return nil
}

// NewCmdForward is `session forward ID [LOCAL:]REMOTE`.
func NewCmdForward(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	return newVerb(f, "forward ID [LOCAL:]REMOTE", "Forward a local 127.0.0.1 port to a port on the session's host, until Ctrl-C", 2, runF, forwardRun, nil)
}

func forwardRun(ctx context.Context, o *Options) error {
	local, remote, err := executor.ParseForward(o.Spec)
	if err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	ready := func(addr string) {
		fmt.Fprintln(o.IO.Out, addr)
		fmt.Fprintf(o.IO.ErrOut, "Forwarding %s -> 127.0.0.1:%d on the host (Ctrl-C to stop)\n", addr, remote)
	}
	onErr := func(err error) { fmt.Fprintf(o.IO.ErrOut, "forward: %v\n", err) }
	return ex.ForwardSession(ctx, o.ID, local, remote, ready, onErr)
}
