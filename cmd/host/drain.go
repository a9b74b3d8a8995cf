package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/hostdrain"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// DrainOptions are `host drain`'s inputs.
type DrainOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	Settings *cmdutil.Settings
	ChildEnv func() ([]string, error) // the worker's settings
	Name     string
	Deadline time.Duration
	Detach   bool
	Watch    bool
	Factory  *cmdutil.Factory // for --watch: the view or the stream of the drain
	// Worker: this process is the drain's background worker, started by
	// another `host drain` (hidden).
	Worker bool
}

// NewCmdDrain is `host drain NAME [--deadline D] [--detach]`.
func NewCmdDrain(f *cmdutil.Factory, runF func(context.Context, *DrainOptions) error) *cobra.Command {
	opts := &DrainOptions{IO: f.IO, Executor: f.Executor, ChildEnv: f.ChildEnv, Factory: f}
	c := &cobra.Command{
		Use:   "drain NAME [--deadline D] [--detach | --watch]",
		Short: "Cordon a host, then stop every session on it gracefully (resumable)",
		Long: `Cordon the host (status draining: no new launches), then stop every session
on it the way ` + "`session stop`" + ` does: the agent gracefully, then its process
group. Task directories stay, so each task can be resumed later. This is not
teardown: nothing is archived or removed.

The work runs in a background worker (one per host; its log is under the
state directory) that retries a session it cannot stop yet every few
seconds. In the foreground its progress is followed on stderr; Ctrl-C
stops following and leaves the drain running (exit 8). --detach returns at
once (exit 8). Once every session has stopped the host stays cordoned and
the command exits 0 (` + "`host uncordon`" + ` takes launches again). Past the
deadline the sessions still running are listed and it exits 8, the host
still draining: running drain again carries on, and follows a drain that
is already under way. ` + "`host uncordon`" + ` stops a drain.

--watch follows it in the live view scoped to the host instead (without a
terminal, a stream of its events that ends with the drain's end; with
--json, one object per event).`,
		Example: `  kandev-exec host drain prod                      # follow it; Ctrl-C leaves it running
  kandev-exec host drain prod --deadline 10m --detach
  kandev-exec host drain prod --watch              # the live view, scoped to prod
  kandev-exec host show prod                       # where a drain stands`,
		Args:              cmdutil.ExactArgs(1, "host drain needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			opts.Name, opts.Settings = args[0], s
			if opts.Deadline <= 0 {
				return cmdutil.FlagErrorf("--deadline must be positive, got %s", opts.Deadline)
			}
			if opts.Detach && opts.Watch {
				return cmdutil.FlagErrorf("--detach and --watch cannot be combined: --detach returns at once, --watch follows the drain")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			if opts.Worker {
				return workerRun(c.Context(), opts)
			}
			return drainRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Deadline, "deadline", executor.DefaultDrainDeadline, "stop trying after this long and list the sessions still running")
	c.Flags().BoolVar(&opts.Detach, "detach", false, "return at once (exit 8); the drain goes on in the background")
	c.Flags().BoolVar(&opts.Watch, "watch", false, "follow it in the live view (a stream of its events without a terminal)")
	c.Flags().BoolVar(&opts.Worker, "worker", false, "run as the drain's background worker")
	_ = c.Flags().MarkHidden("worker")
	return c
}

func drainRun(ctx context.Context, o *DrainOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if o.Watch {
		return watchDrain(ctx, o, ex)
	}
	env, err := o.ChildEnv()
	if err != nil {
		return err
	}
	w, err := hostdrain.Start(ctx, ex, env, o.Name, o.Deadline)
	if err != nil {
		return err
	}
	if o.Detach {
		return o.withHost(ctx, ex, &executor.HostDrainPendingError{Host: o.Name, WorkerPID: w.PID, Log: w.Drain.Log})
	}
	if !o.Settings.JSON {
		fmt.Fprintf(o.IO.ErrOut, "Draining host %s: no new launches; stopping its sessions until %s (Ctrl-C leaves the drain running)\n",
			o.Name, cmdutil.Timestamp(w.Drain.Deadline))
	}
	return follow(ctx, o, ex, w.Drain, w.PID, w.Exited)
}

// follow copies the drain's log to stderr from where this drain starts,
// until no worker holds the host's drain any more, then reports how the
// drain ended. Ctrl-C stops following only.
func follow(ctx context.Context, o *DrainOptions, ex *executor.Executor, d *records.HostDrain, pid int, exited <-chan error) error {
	f, err := fsx.OpenFile(d.Log, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(d.LogOffset, io.SeekStart); err != nil {
		return err
	}
	out := o.IO.ErrOut
	if o.Settings.JSON {
		out = io.Discard
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := io.Copy(out, f); err != nil {
			return err
		}
		if exited == nil {
			holder, err := ex.DrainWorker(context.WithoutCancel(ctx), o.Name)
			if err != nil {
				return err
			}
			if holder == nil {
				_, err := io.Copy(out, f)
				if err != nil {
					return err
				}
				break
			}
			pid = holder.PID
		}
		select {
		case <-ctx.Done():
			return o.withHost(ctx, ex, &executor.HostDrainPendingError{Host: o.Name, WorkerPID: pid, Log: d.Log})
		case <-exited:
			exited = nil
		case <-tick.C:
		}
	}
	return drainOutcome(ctx, o, ex, true)
}

// drainOutcome reads how the drain ended from the host record; report
// prints it (the host's JSON, or a line) when it is complete.
func drainOutcome(ctx context.Context, o *DrainOptions, ex *executor.Executor, report bool) error {
	h, err := ex.ShowHost(ctx, o.Name)
	if err != nil {
		return err
	}
	d := h.Drain
	switch {
	case d == nil:
		return fmt.Errorf("host %s has no drain recorded", o.Name)
	case d.State == records.DrainComplete && !report:
		return nil
	case report && o.Settings.JSON:
		// The host's drain says how far it got, whatever the exit.
		if err := cmdutil.WriteJSON(o.IO.Out, h); err != nil {
			return err
		}
	}
	switch {
	case d.State == records.DrainComplete:
		if o.Settings.JSON {
			return nil
		}
		fmt.Fprintf(o.IO.Out, "Drained host %s: %d session(s) stopped; it stays %s\n", o.Name, len(d.Stopped), h.Status)
		return nil
	case d.State == records.DrainDeadline:
		return &executor.HostDrainPendingError{Host: o.Name, Deadline: d.Deadline, Remaining: d.Remaining}
	case d.State == records.DrainRunning:
		return fmt.Errorf("the drain worker of host %s ended without finishing (its log: %s); `kandev-exec host drain %s` resumes", o.Name, d.Log, o.Name)
	}
	return fmt.Errorf("the drain of host %s ended %s: %s", o.Name, d.State, d.Last)
}

// withHost is err, after the host's JSON (its drain as it stands) with
// --json.
func (o *DrainOptions) withHost(ctx context.Context, ex *executor.Executor, err error) error {
	if !o.Settings.JSON {
		return err
	}
	h, herr := ex.ShowHost(context.WithoutCancel(ctx), o.Name)
	if herr != nil {
		return err
	}
	if werr := cmdutil.WriteJSON(o.IO.Out, h); werr != nil {
		return werr
	}
	return err
}

// workerRun is the background worker: one line per step, timestamped,
// into the log its parent gave it as stderr.
func workerRun(ctx context.Context, o *DrainOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	say := func(line string) {
		fmt.Fprintf(o.IO.ErrOut, "%s %s: %s\n", cmdutil.Timestamp(time.Now()), o.Name, cmdutil.SafeText(line))
	}
	_, err = ex.RunHostDrain(ctx, o.Name, say)
	var claimed *state.ClaimedError
	if errors.As(err, &claimed) {
		h := claimed.Holder
		say(fmt.Sprintf("a drain worker already runs (pid %d on %s since %s): it carries on", h.PID, h.Host, cmdutil.Timestamp(h.Since)))
		return nil
	}
	return err
}
