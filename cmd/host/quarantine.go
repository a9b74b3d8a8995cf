package host

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

// QuarantineOptions are `host quarantine`'s inputs.
type QuarantineOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
	Reason   string
	TTL      time.Duration
}

// NewCmdQuarantine is `host quarantine NAME --reason R [--ttl D]`.
func NewCmdQuarantine(f *cmdutil.Factory, runF func(context.Context, *QuarantineOptions) error) *cobra.Command {
	opts := &QuarantineOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "quarantine NAME --reason R [--ttl D]",
		Short: "Refuse new launches on a host until it is readmitted after a fresh probe",
		Long: `Refuse new launches on the host (exit 9, naming the reason) until
` + "`host readmit`" + ` lifts it after a fresh probe over the pinned keys, or until
--ttl has passed. Recovery, cleanup retries, inspection and teardown go on.

kandev-exec quarantines a host by itself when a teardown cannot confirm that
a session stopped (drain unreachable or uncertain): its directory is kept and
its cleanup job retries. A host already quarantined keeps its first reason.`,
		Example: `  kandev-exec host quarantine prod --reason "disk errors in dmesg"
  kandev-exec host quarantine lab --reason "flaky network" --ttl 2h`,
		Args:              cmdutil.ExactArgs(1, "host quarantine needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdutil.RequireFlags(c, "reason"); err != nil {
				return err
			}
			if c.Flags().Changed("ttl") && opts.TTL <= 0 {
				return cmdutil.FlagErrorf("--ttl must be positive, got %s", opts.TTL)
			}
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return quarantineRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "why (recorded with who and when, shown by host ls and show)")
	c.Flags().DurationVar(&opts.TTL, "ttl", 0, "lift the quarantine by itself after this long (default: only host readmit lifts it)")
	return c
}

func quarantineRun(ctx context.Context, o *QuarantineOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.QuarantineHost(ctx, o.Name, o.Reason, o.TTL)
	if err != nil {
		return err
	}
	until := fmt.Sprintf("until `kandev-exec host readmit %s --reason R`", res.Name)
	if res.StatusUntil != nil {
		until = "until " + cmdutil.Timestamp(*res.StatusUntil) + ", or an earlier readmit"
	}
	return printChange(o.IO, o.JSON, res, fmt.Sprintf("Quarantined host %s: no new launches %s", res.Name, until))
}

// ReadmitOptions are `host readmit`'s inputs.
type ReadmitOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
	Reason   string
}

// NewCmdReadmit is `host readmit NAME --reason R`.
func NewCmdReadmit(f *cmdutil.Factory, runF func(context.Context, *ReadmitOptions) error) *cobra.Command {
	opts := &ReadmitOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "readmit NAME --reason R",
		Short: "Lift a quarantine once the host answers a fresh probe over its pinned keys",
		Long: `Dial the host, enforcing every pinned key, and run a trivial command; only
when that succeeds is the quarantine lifted, with the reason, who and when
recorded. A host that does not answer stays quarantined (the dial's exit
code: 7 unreachable, 5 host key changed, ...).

The tasks on the host that still wait for their cleanup are listed: their
jobs keep retrying, and those waiting for a retry are due now
(` + "`kandev-exec sweep`" + ` runs them).`,
		Example:           `  kandev-exec host readmit prod --reason "disk replaced, fsck clean"`,
		Args:              cmdutil.ExactArgs(1, "host readmit needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdutil.RequireFlags(c, "reason"); err != nil {
				return err
			}
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return readmitRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "why (recorded with who and when, shown by host ls and show)")
	return c
}

func readmitRun(ctx context.Context, o *ReadmitOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.ReadmitHost(ctx, o.Name, o.Reason)
	if err != nil {
		return err
	}
	if err := printChange(o.IO, o.JSON, res, fmt.Sprintf("Readmitted host %s: it answered a fresh probe over its pinned keys and takes launches again", res.Name)); err != nil || o.JSON {
		return err
	}
	printRetained(o.IO, res)
	return nil
}

// printRetained lists the tasks on the host whose cleanup is not done.
func printRetained(ios *cmdutil.IOStreams, res *executor.HostStatusChange) {
	if len(res.Retained) == 0 {
		return
	}
	fmt.Fprintf(ios.Out, "%d task(s) on %s still wait for their cleanup; their jobs keep retrying (`kandev-exec sweep` runs the due ones now):\n", len(res.Retained), res.Name)
	w := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  TASK\tNAME\tPHASE\tJOB\tATTEMPTS\tNEXT\tLAST ERROR")
	for _, r := range res.Retained {
		next := "now"
		if r.NextAt != nil {
			next = cmdutil.Timestamp(*r.NextAt)
		}
		if r.Job == records.JobFailed {
			next = "gave up: `kandev-exec task archive " + r.TaskID + "` again"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.TaskID, cmdutil.SafeText(cmdutil.Dash(r.Name)), cmdutil.Dash(string(r.Phase)), r.Job, r.Attempts,
			next, cmdutil.SafeText(cmdutil.Dash(firstLine(r.LastError))))
	}
	w.Flush()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
