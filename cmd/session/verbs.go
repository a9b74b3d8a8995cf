package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// Options are the inputs of the per-session verbs.
type Options struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	ID       string
	Spec     string
	Logs     executor.LogOptions
	// offsetSet: --offset was given (0 is a position too).
	offsetSet bool
	Prepare   bool          // logs: the prepare script's log instead
	Timeout   time.Duration // wait's bound
}

func newVerb(f *cmdutil.Factory, use, short string, nargs int, runF, run func(context.Context, *Options) error, setup func(*cobra.Command, *Options)) *cobra.Command {
	opts := &Options{IO: f.IO, Executor: f.Executor}
	verb, params, _ := strings.Cut(use, " ")
	need := strings.Replace(strings.Join(strings.Fields(params), " and "), "ID", "a session ID", 1)
	c := &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              cmdutil.ExactArgs(nargs, "session "+verb+" needs "+need),
		ValidArgsFunction: completeSessions(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.JSON = args[0], f.JSON()
			opts.offsetSet = c.Flags().Changed("offset")
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
	c := newVerb(f, "show ID", "Ask the host how a session is doing (running, exited, stopped, lost)", 1, runF, showRun, nil)
	c.Long = `Ask the host how a session is doing (running, exited, stopped, lost), and
record what it says.

When a session ends (its agent exits, session stop, a drain, a bound such as
max_runtime), its controller ends the agent's whole process group at once:
SIGTERM, then SIGKILL after the stop grace. What was still running then is
listed on an "ended with the session" line (ended_processes in --json). The
controller itself stays for 10 minutes afterwards (the linger), so its final
status can still be read; it exits earlier when its session directory is
removed.`
	return c
}

func showRun(ctx context.Context, o *Options) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	s, err := ex.RefreshSession(ctx, o.ID)
	if err != nil {
		if o.JSON && s != nil {
			// The session as recorded, then how asking failed.
			if werr := printSession(o, s); werr != nil {
				return werr
			}
		}
		return err
	}
	return printSession(o, s)
}

func printSession(o *Options, s *records.Session) error {
	v := executor.ViewOf(s)
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, v)
	}
	fmt.Fprintf(o.IO.Out, "%s  task %s  %s  exit %s  pid %s  port %s  started %s\n", s.ID, s.TaskID, cmdutil.SessionState(&v, time.Now()), exitText(s.ExitCode), number(s.PID), number(s.RemotePort), cmdutil.Ago(s.StartedAt))
	if s.Error != "" {
		fmt.Fprintf(o.IO.Out, "error: %s\n", cmdutil.SafeText(s.Error)) // may quote the host
	}
	if s.LogLostBytes > 0 {
		fmt.Fprintf(o.IO.Out, "log: %d bytes of output could not be written on the host (disk full?); `kandev-exec session logs %s` shows where\n", s.LogLostBytes, s.ID)
	}
	switch {
	case s.StopReason != "":
		fmt.Fprintf(o.IO.Out, "stop reason: %s (see `kandev-exec help profile`)\n", s.StopReason)
	case s.MaxRuntimeAt != nil && !s.State.Ended():
		fmt.Fprintf(o.IO.Out, "max_runtime: stopped at %s (%s left)\n", cmdutil.Timestamp(*s.MaxRuntimeAt), cmdutil.RuntimeLeft(*s.MaxRuntimeAt, time.Now()))
	}
	if len(s.EndedProcesses) > 0 {
		fmt.Fprintf(o.IO.Out, "ended with the session: %s\n", endedText(s))
	}
	return nil
}

// endedText lists the agent's processes the session's end had to end.
func endedText(s *records.Session) string {
	names := make([]string, len(s.EndedProcesses))
	for i, p := range s.EndedProcesses {
		names[i] = fmt.Sprintf("%d (%s)", p.PID, cmdutil.SafeText(p.Name)) // named by the agent
	}
	how := "SIGTERM"
	if s.GroupKilled {
		how = "SIGKILL after the stop grace"
	}
	return strings.Join(names, ", ") + "; by " + how
}

// NewCmdLogs is `session logs ID [-f] [--tail N] [--since D] [--timestamps]`.
func NewCmdLogs(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	c := newVerb(f, "logs ID", "Print a session's output; -f follows it until the agent exits", 1, runF, logsRun,
		func(c *cobra.Command, o *Options) {
			fl := c.Flags()
			fl.BoolVarP(&o.Logs.Follow, "follow", "f", false, "keep streaming until the agent exits")
			fl.IntVar(&o.Logs.Tail, "tail", 0, "only the last `N` lines of what is logged so far (0: all)")
			fl.DurationVar(&o.Logs.Since, "since", 0, "hide lines provably older than `D` (see below)")
			fl.BoolVar(&o.Logs.Timestamps, "timestamps", false, "prefix each line with its time, or - when it is not known")
			fl.Int64Var(&o.Logs.Offset, "offset", 0, "print the log from byte `N` (a log_offset of --json)")
			fl.StringVar(&o.Logs.Generation, "generation", "", "with --offset: only if the log is still generation `G` (a log_generation of --json)")
			fl.BoolVar(&o.Prepare, "prepare", false, "print the task's prepare script log instead: its last run's whole output, masked")
		})
	c.Long = `Print a session's output: the agent's stdout and stderr, and the controller's
own [controller] lines. With -f, keep streaming until the agent exits; how it
ended goes to stderr and the command exits as the agent did (its code, 128+N
for signal N). A failure of this tool while following (the host unreachable,
the session lost) is exit 255, the error naming it. With --json the output goes to stderr and stdout gets the
session record.

The log records no time for the agent's output, only for the controller's own
lines, so times mean what can be known:
  --timestamps  a [controller] line shows its own time; a line that arrives
                while following (-f) shows when it arrived here; any other
                line shows "-".
  --since D     hides the lines up to the last [controller] line older than
                D (everything before it is older still); later lines may be
                newer, so they are shown. The host's clock dates the
                controller's lines, this machine's the cutoff.
  --tail N      the last N lines logged so far; -f then follows new ones.
At most 8 MiB is held back to decide; past that, a first line says how many
earlier bytes were not shown.

Positions: with --json the record says how far the printed log reached
(log_offset, a byte offset) and which log it was (log_generation). Reading
again with --offset <log_offset> --generation <log_generation> prints
exactly the rest: nothing twice, nothing missed. The log on the host is
bounded: past 16 MiB it is cut to its newest 8 MiB, which starts a new
generation; a read of a generation that was rotated or replaced since, or
from past the end, fails with exit code 10 naming both generations instead
of printing another log's bytes. A follower (-f) that falls more than a
generation behind goes on in the current one and says on stderr how many
generations and bytes it did not show (with --json, log_skipped_generations
and log_skipped_bytes).

A keepalive watchdog guards the connection: a probe every 15s, and 45s without
any reply counts as the link lost. With -f the command then reconnects, with
backoff, for up to twice the keepalive deadline (90s), says so on stderr, and
goes on from the byte it had; a link still down after that ends it with exit
code 255 (7 without -f) while the agent keeps running on the host. The settings
keepalive-interval and keepalive-deadline change these bounds (see
` + "`kandev-exec help config`" + `).

--prepare prints the prepare script's log instead: the whole output of its
last run in the session's task directory (.kandev/prepare.log on the host),
masked like the agent's, at most 1 MiB of it.`
	c.Example = `  kandev-exec session logs s3xk2 --tail 50 -f
  kandev-exec session logs s3xk2 --prepare
  kandev-exec session logs s3xk2 --since 10m --timestamps
  kandev-exec session logs s3xk2 --offset 5120 --generation 1-9f86d081 --json`
	return c
}

func logsRun(ctx context.Context, o *Options) error {
	if o.Prepare {
		return prepareLogRun(ctx, o)
	}
	if err := checkLogFlags(o); err != nil {
		return err
	}
	o.Logs.FromOffset = o.offsetSet
	var reached *int64
	o.Logs.Reached = func(gen string, off int64) { reached, o.Logs.Generation = &off, gen }
	o.Logs.Reconnect, o.Logs.Notice = true, func(msg string) { fmt.Fprintln(o.IO.ErrOut, cmdutil.SafeText(msg)) }
	var skippedGens int
	var skippedBytes int64
	o.Logs.Skipped = func(sk executor.LogSkip) {
		skippedGens, skippedBytes = skippedGens+sk.Generations, skippedBytes+max(sk.Bytes, 0)
	}
	view := func(s *records.Session) executor.SessionView {
		v := executor.ViewOf(s)
		v.LogSkippedGenerations, v.LogSkippedBytes = skippedGens, skippedBytes
		return v
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	out := o.IO.Out
	if o.JSON {
		out = o.IO.ErrOut // stdout carries the record only
	}
	var started *records.Session
	if o.Logs.Follow {
		// A session that cannot be found or never started fails with its
		// own code; what fails once following began is the tool's.
		if started, err = ex.StartedSession(ctx, o.ID); err != nil {
			return err
		}
	}
	s, err := ex.ShowLogs(ctx, o.ID, o.Logs, out)
	if err != nil {
		if o.Logs.Follow && ctx.Err() != nil {
			fmt.Fprintf(o.IO.ErrOut, "\nStopped following; the agent keeps running: kandev-exec session logs -f %s\n", o.ID)
		}
		if o.Logs.Follow {
			if o.JSON {
				if werr := cmdutil.WriteJSON(o.IO.Out, view(cmdutil.Recorded(ctx, ex, started))); werr != nil {
					return werr
				}
			}
			return cmdutil.ToolFailed(err)
		}
		return err
	}
	lost := o.Logs.Follow && s.State == records.SessionLost
	if o.JSON {
		v := view(s)
		v.LogOffset, v.LogGeneration = reached, o.Logs.Generation
		if err := cmdutil.WriteJSON(o.IO.Out, v); err != nil {
			return err
		}
	} else if !lost {
		fmt.Fprintln(o.IO.ErrOut, cmdutil.SessionOutcome(s))
	}
	if o.Logs.Follow {
		return cmdutil.AgentExit(s) // as `task launch --follow`
	}
	return nil
}

// checkLogFlags refuses flags of `session logs` that contradict each other.
func checkLogFlags(o *Options) error {
	switch {
	case o.Logs.Tail < 0:
		return cmdutil.FlagErrorf("--tail must not be negative, got %d", o.Logs.Tail)
	case o.Logs.Since < 0:
		return cmdutil.FlagErrorf("--since must be a positive duration, got %s", o.Logs.Since)
	case o.Logs.Offset < 0:
		return cmdutil.FlagErrorf("--offset must not be negative, got %d", o.Logs.Offset)
	case o.Logs.Generation != "" && !o.offsetSet:
		return cmdutil.FlagErrorf("--generation needs --offset: the generation is the log an offset was read in")
	case o.offsetSet && (o.Logs.Tail > 0 || o.Logs.Since > 0):
		return cmdutil.FlagErrorf("--offset prints from a byte: it cannot be combined with --tail or --since")
	}
	return nil
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
	if err := printSession(o, s); err != nil {
		return err
	}
	if !o.JSON {
		fmt.Fprintln(o.IO.ErrOut, cmdutil.SessionOutcome(s))
	}
	return nil
}

// NewCmdForward is `session forward ID [LOCAL:]REMOTE`.
func NewCmdForward(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	c := newVerb(f, "forward ID [LOCAL:]REMOTE", "Forward a local 127.0.0.1 port to a port on the session's host, until Ctrl-C", 2, runF, forwardRun, nil)
	c.Long = `Listen on 127.0.0.1:LOCAL (0 or omitted: any free port) and carry each
connection to 127.0.0.1:REMOTE on the session's host over SSH, until Ctrl-C.
The local address is printed on stdout once listening (with --json, as
{"session_id", "local", "remote"}). A link silent past the keepalive deadline
ends the forward with exit code 7. A host whose SSH server refuses port
forwarding (AllowTcpForwarding no, DisableForwarding yes) is refused before
listening, exit code 1, naming the server's refusal.`
	c.Example = `  kandev-exec session forward s3xk2 8080
  kandev-exec session forward s3xk2 9000:8080`
	return c
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
	ready := func(sessionID, addr string) {
		if o.JSON {
			_ = cmdutil.WriteJSON(o.IO.Out, map[string]any{"session_id": sessionID, "local": addr, "remote": remote})
		} else {
			fmt.Fprintln(o.IO.Out, addr)
		}
		fmt.Fprintf(o.IO.ErrOut, "Forwarding %s -> 127.0.0.1:%d on the host of session %s (Ctrl-C to stop)\n", addr, remote, sessionID)
	}
	onErr := func(err error) {
		fmt.Fprintf(o.IO.ErrOut, "forward to 127.0.0.1:%d on the host: %s\n", remote, cmdutil.SafeText(err.Error()))
	}
	return ex.ForwardSession(ctx, o.ID, local, remote, ready, onErr)
}

// prepareLogRun prints the prepare log of the session's task.
func prepareLogRun(ctx context.Context, o *Options) error {
	if o.Logs.Follow || o.Logs.Tail != 0 || o.Logs.Since != 0 || o.Logs.Timestamps {
		return cmdutil.FlagErrorf("--prepare prints the whole prepare log: it takes no -f, --tail, --since or --timestamps")
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	return ex.PrepareLog(ctx, o.ID, o.IO.Out)
}
