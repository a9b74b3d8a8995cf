package task

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// ShowOptions are `task show`'s inputs.
type ShowOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	ID       string
	Refresh  bool
}

// NewCmdShow is `task show ID` (a unique prefix is enough).
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show a task, and its sessions as last recorded (--refresh asks the host)",
		Long: `Show a task: where it runs, its branch and the commit it started from, its
phase, and each session with its state as last recorded (with its age once
that is more than a minute old and the host may have moved on). A launch cut
short is settled first.

With --refresh the host is asked about every session of the task in one
call, and the answers are recorded; if it cannot be asked, the sessions keep
their recorded state, marked "not refreshed", and the command exits with the
failure's code (7 when unreachable) after showing the task.`,
		Args:              cmdutil.ExactArgs(1, "task show needs a task ID"),
		ValidArgsFunction: completeTasks(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return showRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Refresh, "refresh", false, "ask the host how the task's sessions are doing first, and record it")
	return c
}

func showRun(ctx context.Context, o *ShowOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	t, _, err := ex.GetTask(ctx, o.ID)
	if err != nil {
		return err
	}
	// An interrupted launch is settled here, asking the host if needed; the
	// task is shown either way.
	ts, _, err := ex.RecoverTasks(ctx, []*records.Task{t}, true)
	if err != nil {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s\n", cmdutil.SafeText(err.Error()))
	}
	t = ts[0]
	job, err := ex.TaskJob(ctx, t.ID)
	if err != nil {
		return err
	}
	sessions, err := taskSessions(ctx, ex, t, o.Refresh)
	if err != nil {
		return err
	}
	v := viewOf(t, job)
	for _, s := range sessions {
		v.SessionStates = append(v.SessionStates, SessionState{ID: s.ID, State: string(s.State), ExitCode: s.ExitCode,
			StateRecordedAt: s.StateRecordedAt, RefreshError: s.RefreshError, Observation: s.Observation, ObservedAt: s.ObservedAt})
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(o.IO.Out, v); err != nil {
			return err
		}
		return cmdutil.RefreshOutcome(o.IO, sessions, true)
	}
	w, now := o.IO.Out, time.Now()
	fmt.Fprintf(w, "id:        %s\nname:      %s\nprofile:   %s\nhost:      %s\n", t.ID, t.Name, t.Profile, t.Host)
	fmt.Fprintf(w, "task dir:  %s\nbranch:    %s\n", cmdutil.Safe(taskDirText(t)), t.Branch)
	fmt.Fprintf(w, "base:      %s\n", baseText(t))
	if t.TaskDir != "" && len(t.Sessions) > 0 {
		fmt.Fprintf(w, "prepare:   %s (`kandev-exec session logs --prepare %s`)\n",
			cmdutil.Safe(path.Join(t.TaskDir, ".kandev", executor.PrepareLog)), t.Sessions[len(t.Sessions)-1])
	}
	fmt.Fprintf(w, "phase:     %s\ncreated:   %s\n", phaseText(t, job, now), cmdutil.AgoFrom(t.CreatedAt, now))
	if v.IdempotencyKey != "" {
		fmt.Fprintf(w, "key:       %s\n", cmdutil.SafeText(v.IdempotencyKey))
	}
	for i := range sessions {
		s := &sessions[i]
		line := s.ID + "  " + cmdutil.SessionState(s, now)
		if s.ExitCode != nil {
			line += fmt.Sprintf("  exit %d", *s.ExitCode)
		}
		fmt.Fprintf(w, "session:   %s\n", line)
	}
	if t.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", cmdutil.SafeText(t.Error)) // may quote the host
	}
	showTeardown(w, v)
	return cmdutil.RefreshOutcome(o.IO, sessions, false)
}

// taskSessions are t's sessions, oldest first: as recorded, or as its
// host says now (refresh). A session missing from the store is left out.
func taskSessions(ctx context.Context, ex *executor.Executor, t *records.Task, refresh bool) ([]executor.SessionView, error) {
	all, err := ex.ListSessions(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	byID := map[string]*records.Session{}
	for _, s := range all {
		byID[s.ID] = s
	}
	var ss []*records.Session
	for _, id := range t.Sessions {
		if s := byID[id]; s != nil {
			ss = append(ss, s)
		}
	}
	if refresh {
		vs := ex.RefreshSessions(ctx, ss)
		cmdutil.FillRefreshErrors(vs)
		return vs, nil
	}
	vs := make([]executor.SessionView, len(ss))
	for i, s := range ss {
		vs[i] = executor.ViewOf(s)
	}
	return vs, nil
}

// baseText is where the task branch started: the base branch and the
// commit, as far as they are known.
func baseText(t *records.Task) string {
	if t.Repo == "" {
		return "- (no repository: the prepare script fills the directory)"
	}
	branch := t.BaseBranch
	if branch == "" {
		branch = "the remote's default branch"
	}
	if t.BaseCommit == "" {
		return branch
	}
	return fmt.Sprintf("%s at %.12s", branch, t.BaseCommit)
}

// showTeardown prints what the cleanup job found and where it stands.
func showTeardown(w io.Writer, v View) {
	if v.Drain != "" {
		drain := v.Drain
		if v.Receipt != "" {
			drain += " (receipt " + v.Receipt + ")"
		}
		fmt.Fprintf(w, "drain:     %s\n", drain)
	}
	if v.Reclaim != "" {
		fmt.Fprintf(w, "directory: %s\n", v.Reclaim)
	}
	if v.Reason != "" {
		fmt.Fprintf(w, "reason:    %s\n", cmdutil.SafeText(v.Reason))
	}
	showProof(w, v.Proof)
	if v.CleanupOutput != "" {
		fmt.Fprintln(w, "cleanup output:")
		for _, line := range strings.Split(strings.TrimRight(v.CleanupOutput, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", cmdutil.Safe(line))
		}
	}
	if j := v.Job; j != nil {
		fmt.Fprintf(w, "cleanup:   %s job, %s, %d attempt(s)", j.Trigger, j.State, j.Attempts)
		if j.NextAt != nil {
			fmt.Fprintf(w, ", next %s", cmdutil.Ago(*j.NextAt))
		}
		fmt.Fprintln(w)
		if j.LastError != "" {
			fmt.Fprintf(w, "last error: %s\n", cmdutil.SafeText(j.LastError))
		}
	}
}

// taskDirText is the task directory, or where prepare makes it while no
// prepare has finished (it may already be there, half made).
func taskDirText(t *records.Task) string {
	if t.TaskDir != "" {
		return t.TaskDir
	}
	return path.Join(t.Root, "tasks", t.DirName) + " (not prepared yet)"
}
