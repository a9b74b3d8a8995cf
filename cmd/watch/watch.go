// Package watch is `kandev-exec watch`: the live view on a terminal, or
// the journal as a stream of lines (plain or NDJSON) for scripts; and
// Follow, the same for what another command started.
package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/tui"
)

// WatchOptions are `watch`'s inputs.
type WatchOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	// Actions gives the view's actions over the executor (tests put
	// their own).
	Actions func(*executor.Executor) tui.Actions

	Host, Task string
	Since      int64 // replay after this sequence number; -1: from now on
	Until      string
	NoTUI      bool
	JSON       bool
	ReadOnly   bool
	// Claims keeps claim events (claim.acquired, claim.released), which
	// the stream leaves out and the view hides until C.
	Claims bool
	// Stop ends a stream after the entry it returns true for (Until, or
	// what another command waits for).
	Stop func(state.Entry, records.Detail) bool
	// Done, once closed, ends a stream after what the journal then holds
	// (another command's work returned: nothing more of it will come).
	Done <-chan struct{}
	// Poll is the least time between two reads of the journal by the view
	// (default 250ms); each read waits for news through the store.
	Poll time.Duration
	// Now is the view's clock; nil is the wall clock (tests fix it).
	Now func() time.Time
}

// NewOptions are the options over f, for `watch` and for other
// commands' --watch (see Follow).
func NewOptions(f *cmdutil.Factory) *WatchOptions {
	actions := func(ex *executor.Executor) tui.Actions { return executorActions{ex: ex, childEnv: f.ChildEnv} }
	return &WatchOptions{IO: f.IO, Executor: f.Executor, Actions: actions, Since: -1}
}

// NewCmdWatch is `watch`.
func NewCmdWatch(f *cmdutil.Factory, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	opts := NewOptions(f)
	c := &cobra.Command{
		Use:   "watch",
		Short: "Live view of hosts, environments, drain, destroy and quarantine",
		Long: `On a terminal, a live view of hosts, task environments and the journal, with
drain, cordon, quarantine, readmit, archive and sweep on the selection (? lists
every key). Without a terminal, or with --no-tui, one plain line per journal
event; with --json, one JSON object per line (epoch, seq, at, kind, name, type,
host, task_id, phase, detail).

Claim events (claim.acquired, claim.released: which kandev-exec holds a task
or a host while it works on it) come in pairs around every change and are
left out unless --claims is given; in the view, C shows or hides them.

--since SEQ replays the events after SEQ first (0: the whole journal), and
--until PHASE stops after the first event that reaches PHASE, so a script can
wait for a task to be archived:

  kandev-exec watch --task ID --since 0 --until archived --json`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if c.Flags().Changed("since") && opts.Since < 0 {
				return cmdutil.WithHint(cmdutil.FlagErrorf("--since %d: give a sequence number, 0 or more", opts.Since), "usage: "+c.UseLine())
			}
			if err := opts.check(); err != nil {
				return cmdutil.WithHint(err, "usage: "+c.UseLine())
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Host, "host", "", "only this host, its environments and their events")
	fl.StringVar(&opts.Task, "task", "", "only this task (ID, unique prefix or name), its host and its events")
	fl.BoolVar(&opts.NoTUI, "no-tui", false, "print one line per event instead of the live view (automatic without a terminal)")
	fl.Int64Var(&opts.Since, "since", -1, "replay the events after this sequence number first (0: the whole journal)")
	fl.StringVar(&opts.Until, "until", "", "stop after the first event that reaches this phase or status (implies --no-tui)")
	fl.BoolVar(&opts.ReadOnly, "read-only", false, "the live view offers no action")
	fl.BoolVar(&opts.Claims, "claims", false, "keep claim events (claim.acquired, claim.released), left out by default")
	_ = c.RegisterFlagCompletionFunc("host", cmdutil.CompleteNames(f, 0, func(ex *executor.Executor, ctx context.Context) ([]string, error) {
		return ex.HostNames(ctx)
	}))
	_ = c.RegisterFlagCompletionFunc("task", cmdutil.CompleteTasks(f, 0))
	_ = c.RegisterFlagCompletionFunc("until", cobra.FixedCompletions(phases(), cobra.ShellCompDirectiveNoFileComp))
	return c
}

// phases are what --until accepts: every phase, status and state an
// event's detail can name.
func phases() []string {
	var out []string
	for _, p := range records.Phases {
		out = append(out, string(p))
	}
	for _, s := range records.HostStatuses {
		out = append(out, string(s))
	}
	for _, s := range records.SessionStates {
		out = append(out, string(s))
	}
	for _, s := range records.JobStates {
		out = append(out, string(s))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (o *WatchOptions) check() error {
	switch {
	case o.Host != "" && o.Task != "":
		return cmdutil.FlagErrorf("give --host or --task, not both")
	case o.Until != "" && !slices.Contains(phases(), o.Until):
		return cmdutil.FlagErrorf("--until %q is not a phase or status; one of: %s", o.Until, strings.Join(phases(), ", "))
	}
	if o.Until != "" {
		until := o.Until
		o.Stop = func(_ state.Entry, d records.Detail) bool { return d.Phase == until }
	}
	return nil
}

// Run shows the live view on a terminal, else prints the stream.
func Run(ctx context.Context, o *WatchOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if err := o.resolve(ctx, ex); err != nil {
		return err
	}
	if !o.IO.IsStdoutTTY() || !o.IO.CanPrompt() || o.NoTUI || o.JSON || o.Stop != nil {
		return stream(ctx, o, ex.Store())
	}
	return view(ctx, o, ex)
}

// resolve checks the scope names something, and turns a task's prefix
// or name into its ID.
func (o *WatchOptions) resolve(ctx context.Context, ex *executor.Executor) error {
	if o.Task != "" {
		t, _, err := ex.GetTask(ctx, o.Task)
		if err != nil {
			return err
		}
		o.Task = t.ID
	}
	if o.Host != "" {
		names, err := ex.HostNames(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(names, o.Host) {
			return &records.NotFoundError{What: "host", Name: o.Host, ListCmd: "host ls"}
		}
	}
	return nil
}

// renderer paints the view with the 16 ANSI colours (the terminal's own
// palette, readable on light and dark backgrounds), or with nothing at
// all under NO_COLOR, --no-color or TERM=dumb.
func renderer(ios *cmdutil.IOStreams) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(ios.Out)
	r.SetColorProfile(termenv.Ascii)
	if ios.ColorEnabled() {
		r.SetColorProfile(termenv.ANSI)
	}
	return r
}

func view(ctx context.Context, o *WatchOptions, ex *executor.Executor) error {
	to := tui.Options{Store: ex.Store(), Scope: records.Scope{Host: o.Host, Task: o.Task}, Since: o.Since, Renderer: renderer(o.IO),
		Poll: o.Poll, Now: o.Now, Claims: o.Claims}
	if !o.ReadOnly {
		to.Actions = o.Actions(ex)
	}
	o.IO.TakeTerminal()
	err := tui.Run(ctx, to, o.IO.In, o.IO.Out)
	if errors.Is(err, tui.ErrHangup) || errors.Is(err, tui.ErrSignalled) {
		return fmt.Errorf("%w: %w", cmdutil.ErrInterrupted, err)
	}
	return err
}
