package session

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ListOptions are `session ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Task     string
	Refresh  bool
}

// NewCmdList is `session ls [--task ID]`, from local state only.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sessions as last recorded (newest first); --refresh asks their hosts first",
		Long: `List sessions as last recorded, newest first. A state the host may have
changed since says how old it is once that is more than a minute:
"running (recorded 5m ago)".

With --refresh, every host involved is asked first, in parallel, in one
call per host for all of its sessions, and the answers are recorded. The
sessions of a host that cannot be asked keep their recorded state, marked
"not refreshed"; the command then exits 3 when other hosts answered, or
with that host's failure (7 when unreachable) when none did.`,
		Example: `  kandev-exec session ls --refresh
  kandev-exec session ls --task fix-login --json`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Task, "task", "", "only sessions of this task")
	c.Flags().BoolVar(&opts.Refresh, "refresh", false, "ask the hosts how their sessions are doing first, and record it")
	_ = c.RegisterFlagCompletionFunc("task", cmdutil.CompleteTasks(f, 0))
	return c
}

func listRun(ctx context.Context, o *ListOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	ss, err := ex.ListSessions(ctx, o.Task)
	if err != nil {
		return err
	}
	vs := make([]executor.SessionView, len(ss))
	if o.Refresh {
		vs = ex.RefreshSessions(ctx, ss)
		cmdutil.FillRefreshErrors(vs)
	} else {
		for i, s := range ss {
			vs[i] = executor.ViewOf(s)
		}
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(o.IO.Out, vs); err != nil {
			return err
		}
	} else if len(vs) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No sessions.")
	} else if err := printList(o.IO.Out, vs, time.Now()); err != nil {
		return err
	}
	return cmdutil.RefreshOutcome(o.IO, vs, o.JSON)
}

func printList(w io.Writer, vs []executor.SessionView, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTASK\tHOST\tSTATE\tEXIT\tPID\tPORT\tSTARTED")
	for i := range vs {
		s := &vs[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.TaskID, s.Host, cmdutil.SessionState(s, now), exitText(s.ExitCode), number(s.PID), number(s.RemotePort), cmdutil.AgoFrom(s.StartedAt, now))
	}
	return tw.Flush()
}

// number is a pid or a port, "-" before the controller ever started.
func number(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func exitText(code *int) string {
	if code == nil {
		return "-"
	}
	return fmt.Sprint(*code)
}
