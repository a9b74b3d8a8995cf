package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
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
	Name     string
	Deadline time.Duration
	Detach   bool
	// Worker: this process is the drain's background worker, started by
	// another `host drain` (hidden).
	Worker bool
}

// NewCmdDrain is `host drain NAME [--deadline D] [--detach]`.
func NewCmdDrain(f *cmdutil.Factory, runF func(context.Context, *DrainOptions) error) *cobra.Command {
	opts := &DrainOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "drain NAME [--deadline D] [--detach]",
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
is already under way. ` + "`host uncordon`" + ` stops a drain.`,
		Example: `  kandev-exec host drain prod                      # follow it; Ctrl-C leaves it running
  kandev-exec host drain prod --deadline 10m --detach
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
	c.Flags().BoolVar(&opts.Worker, "worker", false, "run as the drain's background worker")
	_ = c.Flags().MarkHidden("worker")
	return c
}

func drainRun(ctx context.Context, o *DrainOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	w, err := StartDrain(ctx, ex, o.Settings, o.Name, o.Deadline)
	if err != nil {
		return err
	}
	if o.Detach {
		return &executor.HostDrainPendingError{Host: o.Name, WorkerPID: w.PID, Log: w.Drain.Log}
	}
	if !o.Settings.JSON {
		fmt.Fprintf(o.IO.ErrOut, "Draining host %s: no new launches; stopping its sessions until %s (Ctrl-C leaves the drain running)\n",
			o.Name, w.Drain.Deadline.Format(time.RFC3339))
	}
	return follow(ctx, o, ex, w.Drain, w.PID, w.Exited)
}

// StartedDrain is a drain started by StartDrain: as recorded on the host,
// and the background worker running it.
type StartedDrain struct {
	Drain  *records.HostDrain
	PID    int
	Exited <-chan error // receives when the worker ends
}

// StartDrain marks host draining (or extends the drain under way) and
// starts its background worker: what `host drain` and watch's drain key
// both do. The drain goes on without the caller; its steps reach the
// journal and the log named on the record.
func StartDrain(ctx context.Context, ex *executor.Executor, s *cmdutil.Settings, host string, deadline time.Duration) (*StartedDrain, error) {
	log, err := ex.DrainLog(host)
	if err != nil {
		return nil, err
	}
	var offset int64
	if fi, err := os.Stat(log); err == nil {
		offset = fi.Size()
	}
	d, err := ex.BeginHostDrain(ctx, host, time.Now().Add(deadline), log, offset)
	if err != nil {
		return nil, err
	}
	pid, exited, err := startWorker(s, host, log)
	if err != nil {
		return nil, fmt.Errorf("starting the drain worker of host %s: %w", host, err)
	}
	return &StartedDrain{Drain: d, PID: pid, Exited: exited}, nil
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
			holder, err := ex.DrainWorker(o.Name)
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
			return &executor.HostDrainPendingError{Host: o.Name, WorkerPID: pid, Log: d.Log}
		case <-exited:
			exited = nil
		case <-tick.C:
		}
	}
	return drainOutcome(ctx, o, ex)
}

// drainOutcome reads how the drain ended from the host record.
func drainOutcome(ctx context.Context, o *DrainOptions, ex *executor.Executor) error {
	h, err := ex.ShowHost(ctx, o.Name)
	if err != nil {
		return err
	}
	d := h.Drain
	switch {
	case d == nil:
		return fmt.Errorf("host %s has no drain recorded", o.Name)
	case d.State == records.DrainComplete:
		if o.Settings.JSON {
			return cmdutil.WriteJSON(o.IO.Out, h)
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

// startWorker starts the drain's worker: this program again, in its own
// session (a terminal's Ctrl-C never reaches it), writing to the log.
// exited says when it ends.
func startWorker(s *cmdutil.Settings, host, log string) (int, <-chan error, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, nil, err
	}
	lf, err := fsx.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, nil, err
	}
	defer lf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, nil, err
	}
	defer null.Close()
	cmd := &exec.Cmd{Path: exe, Args: []string{os.Args[0], "host", "drain", host, "--worker"},
		Env: workerEnv(s), Stdin: null, Stdout: lf, Stderr: lf,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd.Process.Pid, exited, nil
}

// workerEnv hands the worker this process's settings through their
// environment twins: the worker has no flags of its own.
func workerEnv(s *cmdutil.Settings) []string {
	set := map[string]string{
		"KANDEV_EXEC_STATE_DIR":    s.StateDir,
		"KANDEV_EXEC_LOCK_TIMEOUT": s.LockTimeout.String(),
		"NO_COLOR":                 "1",
	}
	if s.SSHConfig != "" {
		set["KANDEV_EXEC_SSH_CONFIG"] = s.SSHConfig
	}
	if _, err := os.Stat(s.ConfigFile); err == nil {
		set["KANDEV_EXEC_CONFIG"] = s.ConfigFile
	}
	for k, d := range map[string]time.Duration{"KANDEV_EXEC_CONNECT_TIMEOUT": s.ConnectTimeout,
		"KANDEV_EXEC_KEEPALIVE_INTERVAL": s.KeepaliveInterval, "KANDEV_EXEC_KEEPALIVE_DEADLINE": s.KeepaliveDeadline} {
		if d > 0 {
			set[k] = d.String()
		}
	}
	if s.Debug {
		set["KANDEV_EXEC_DEBUG"] = "1"
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// workerRun is the background worker: one line per step, timestamped,
// into the log its parent gave it as stderr.
func workerRun(ctx context.Context, o *DrainOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	say := func(line string) {
		fmt.Fprintf(o.IO.ErrOut, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), o.Name, cmdutil.SafeText(line))
	}
	_, err = ex.RunHostDrain(ctx, o.Name, say)
	var locked *state.LockedError
	if errors.As(err, &locked) {
		who := "another process"
		if h := locked.Holder; h != nil && h.PID > 0 {
			who = fmt.Sprintf("pid %d since %s", h.PID, h.Since.UTC().Format(time.RFC3339))
		}
		say(fmt.Sprintf("a drain worker already runs (%s): it carries on", who))
		return nil
	}
	return err
}
