// Package sweep is `kandev-exec sweep`: run the cleanup jobs that are due.
package sweep

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// Options are `sweep`'s inputs.
type Options struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Timeout  time.Duration
	DryRun   bool
}

// NewCmdSweep is `sweep`.
func NewCmdSweep(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "sweep",
		Short: "Run the cleanup jobs that are due (for cron and CI)",
		Long: `Run every due cleanup job of task archive/delete once: those never tried,
and those whose retry time has come (backoff 1m 5m 15m 1h 3h 6h 12h). A job
that failed 8 attempts is not run again but still listed, with its last
error, until ` + "`task archive ID`" + ` (or delete) re-arms it. A job another
kandev-exec is running is left to it; one whose holder died is taken over.
Safe to run from cron on two machines at once: a job's attempts fence each
other.

First, every ready task whose profile sets archive_after and that has been
idle that long (its sessions all ended, no launch, resume, exec or shell
since) is archived: its cleanup job is queued and runs with the others,
reclaiming its directory as the profile says. --dry-run lists those tasks
and changes nothing.

Exits 0 when no listed job is pending or failed, 8 when some are still
pending (they retry by themselves), 1 when some failed (they wait for a
person; this wins over 8).`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if opts.Timeout <= 0 {
				return cmdutil.FlagErrorf("--timeout must be positive, got %s", opts.Timeout)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return sweepRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", executor.DefaultTeardownBudget, "bound on each job's attempt")
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list the idle tasks archive_after would archive now, and change nothing")
	return c
}

func sweepRun(ctx context.Context, o *Options) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	idle, err := ex.ArchiveIdle(ctx, time.Now(), o.DryRun)
	if o.DryRun || err != nil {
		if err == nil {
			err = printIdle(o, idle)
		}
		return err
	}
	if len(idle) > 0 && !o.JSON {
		fmt.Fprintf(o.IO.ErrOut, "• Archiving %d idle task(s): %s\n", len(idle), idleIDs(idle))
	}
	res, err := ex.Sweep(ctx, o.Timeout)
	if err != nil {
		return err
	}
	pending, failed := 0, 0
	for _, r := range res {
		switch r.State {
		case records.JobPending, records.JobRetryWait:
			pending++
		case records.JobFailed:
			failed++
		}
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(o.IO.Out, res); err != nil {
			return err
		}
	} else {
		printTable(o.IO, res)
	}
	if failed > 0 {
		return &cmdutil.ExitCodeError{Code: cmdutil.ExitError.Status, JSON: cmdutil.ExitError.Code,
			Msg: fmt.Sprintf("%d of %d cleanup jobs failed after %d attempts and are not retried; `kandev-exec task archive ID` (or delete) tries again", failed, len(res), records.MaxAttempts)}
	}
	if pending > 0 {
		return &cmdutil.ExitCodeError{Code: cmdutil.ExitPending.Status, JSON: cmdutil.ExitPending.Code,
			Msg: fmt.Sprintf("%d of %d cleanup jobs still pending; `kandev-exec task show ID` says when each retries", pending, len(res)), Printed: true}
	}
	return nil
}

func printTable(ios *cmdutil.IOStreams, res []executor.SweepResult) {
	if len(res) == 0 {
		fmt.Fprintln(ios.ErrOut, "No cleanup job is due")
		return
	}
	w := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tHOST\tTRIGGER\tPHASE\tDRAIN\tRECLAIM\tJOB\tATTEMPTS\tNEXT\tNOTE")
	for _, r := range res {
		next := ""
		switch {
		case r.State == records.JobFailed:
			next = "gave up"
		case r.NextAt != nil:
			next = cmdutil.Ago(*r.NextAt)
		}
		note := r.Reason
		if r.Error != "" {
			note = r.Error
		}
		// One line a row: `task show ID` has the whole of it.
		note, _, _ = strings.Cut(note, "\n")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.TaskID, r.Host, r.Trigger, cmdutil.Dash(string(r.Phase)),
			cmdutil.Dash(string(r.Drain)), cmdutil.Dash(string(r.Reclaim)), r.State, r.Attempts, cmdutil.Dash(next), cmdutil.Safe(cmdutil.Dash(note)))
	}
	w.Flush()
}

// printIdle lists what --dry-run would archive.
func printIdle(o *Options, idle []executor.IdleTask) error {
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, idle)
	}
	if len(idle) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No task has been idle for its profile's archive_after")
		return nil
	}
	w := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tHOST\tPROFILE\tIDLE SINCE\tARCHIVE AT")
	for _, t := range idle {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.TaskID, t.Host, t.Profile, cmdutil.Timestamp(t.IdleSince), cmdutil.Timestamp(t.ArchiveAt))
	}
	w.Flush()
	fmt.Fprintf(o.IO.ErrOut, "Would archive %d idle task(s); `kandev-exec sweep` does\n", len(idle))
	return nil
}

func idleIDs(idle []executor.IdleTask) string {
	ids := make([]string, len(idle))
	for i, t := range idle {
		ids[i] = t.TaskID
	}
	return strings.Join(ids, ", ")
}
