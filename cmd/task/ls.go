package task

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// taskPhases are the phases --phase accepts: the records' lifecycle.
var taskPhases = func() []string {
	out := make([]string, len(records.Phases))
	for i, p := range records.Phases {
		out[i] = string(p)
	}
	return out
}()

// ListOptions are `task ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Host     string
	Profile  string
	Phase    string
	Limit    int
}

// NewCmdList is `task ls [--host H] [--profile P] [--phase X] [--limit N]`;
// it reads local state only.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List tasks (newest first)",
		Example: `  kandev-exec task ls --host prod --phase ready
  kandev-exec task ls --profile web --limit 5 --json`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if opts.Phase != "" && !slices.Contains(taskPhases, opts.Phase) {
				return cmdutil.FlagErrorf("--phase %q is not a task phase (want one of %s)", opts.Phase, strings.Join(taskPhases, ", "))
			}
			if opts.Limit < 0 {
				return cmdutil.FlagErrorf("--limit must not be negative, got %d", opts.Limit)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Host, "host", "", "only tasks on this `HOST`")
	c.Flags().StringVar(&opts.Profile, "profile", "", "only tasks of this `PROFILE`")
	c.Flags().StringVar(&opts.Phase, "phase", "", "only tasks in this `PHASE` ("+strings.Join(taskPhases, ", ")+")")
	c.Flags().IntVar(&opts.Limit, "limit", 0, "at most `N` tasks, the newest (0: all)")
	_ = c.RegisterFlagCompletionFunc("phase", cobra.FixedCompletions(taskPhases, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func listRun(ctx context.Context, o *ListOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	ts, err := ex.ListTasks(ctx, o.Host)
	if err != nil {
		return err
	}
	// Local state only: what an interrupted launch left is settled when
	// the records prove it, and named when only the host can tell.
	ts, pending, err := ex.RecoverTasks(ctx, ts, false)
	if err != nil {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s\n", cmdutil.SafeText(err.Error()))
	}
	for _, s := range pending {
		fmt.Fprintf(o.IO.ErrOut, "note: task %s: the launch of session %s was interrupted; `kandev-exec task show %s` asks %s and settles it\n", s.TaskID, s.ID, s.TaskID, s.Host)
	}
	ts = o.filter(ts)
	jobs, err := ex.Jobs(ctx)
	if err != nil {
		return err
	}
	bounded, err := boundedSessions(ctx, ex)
	if err != nil {
		return err
	}
	archive, err := ex.ArchiveTimes(ctx, ts)
	if err != nil {
		return err
	}
	if o.JSON {
		views := make([]View, 0, len(ts))
		for _, t := range ts {
			v := viewOf(t, jobs[t.ID])
			v.MaxRuntimeAt = bounded[t.ID]
			if it, ok := archive[t.ID]; ok {
				v.ArchiveAt = &it.ArchiveAt
			}
			views = append(views, v)
		}
		return cmdutil.WriteJSON(o.IO.Out, views)
	}
	switch {
	case len(ts) == 0 && o.filters() == "":
		fmt.Fprintln(o.IO.ErrOut, "No tasks yet: kandev-exec task launch --profile P -- CMD")
		return nil
	case len(ts) == 0:
		fmt.Fprintf(o.IO.ErrOut, "No task matches %s (kandev-exec task ls lists them all)\n", o.filters())
		return nil
	}
	// LAST ERROR only when a cleanup in progress has one: most tables
	// have none, and keep their width.
	withErr := slices.ContainsFunc(ts, func(t *records.Task) bool { return cleanupError(jobs[t.ID]) != "" })
	withLeft := slices.ContainsFunc(ts, func(t *records.Task) bool { return bounded[t.ID] != nil })
	tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	head := "ID\tNAME\tPROFILE\tHOST\tPHASE\tSESSIONS\tCREATED"
	if withLeft {
		head += "\tRUNTIME LEFT"
	}
	if withErr {
		head += "\tLAST ERROR"
	}
	fmt.Fprintln(tw, head)
	now := time.Now()
	for _, t := range ts {
		j := jobs[t.ID]
		phase := listPhase(t, j, now)
		if it, ok := archive[t.ID]; ok {
			phase += archiveText(it.ArchiveAt, now)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s", t.ID, t.Name, t.Profile, t.Host, phase, len(t.Sessions), cmdutil.Ago(t.CreatedAt))
		if withLeft {
			left := "-"
			if at := bounded[t.ID]; at != nil {
				left = cmdutil.RuntimeLeft(*at, now)
			}
			row += "\t" + left
		}
		if withErr {
			row += "\t" + cmdutil.SafeText(cmdutil.Dash(cleanupError(j)))
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// listPhase is phaseText with, while a cleanup is unfinished, what its
// drain proved: the one outcome that says whether the directory is safe.
func listPhase(t *records.Task, j *records.CleanupJob, now time.Time) string {
	text := phaseText(t, j, now)
	if t.Teardown == nil || t.Teardown.Drain == "" || j == nil || j.State == records.JobSucceeded || j.State == records.JobCancelled {
		return text
	}
	return text + ", drain " + string(t.Teardown.Drain)
}

// errorWidth bounds the LAST ERROR cell; `task show ID` has all of it.
const errorWidth = 60

// cleanupError is the first line of an unfinished cleanup job's last
// error, cut to errorWidth.
func cleanupError(j *records.CleanupJob) string {
	if j == nil || (j.State != records.JobRetryWait && j.State != records.JobFailed) {
		return ""
	}
	line, _, _ := strings.Cut(j.LastError, "\n")
	if r := []rune(line); len(r) > errorWidth {
		line = string(r[:errorWidth-1]) + "…"
	}
	return line
}

// filter keeps the tasks every given filter accepts, newest first, at
// most Limit of them. The host was filtered when reading.
func (o *ListOptions) filter(ts []*records.Task) []*records.Task {
	out := ts[:0:0]
	for _, t := range ts {
		if (o.Profile == "" || t.Profile == o.Profile) && (o.Phase == "" || string(t.Phase) == o.Phase) {
			out = append(out, t)
		}
	}
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	return out
}

// filters says which filters were given, as flags.
func (o *ListOptions) filters() string {
	var f []string
	for _, x := range []struct{ flag, v string }{{"--host", o.Host}, {"--profile", o.Profile}, {"--phase", o.Phase}} {
		if x.v != "" {
			f = append(f, x.flag+" "+x.v)
		}
	}
	return strings.Join(f, " ")
}

// boundedSessions maps each task whose latest session runs bounded by
// max_runtime to when that session's agent is stopped, as recorded.
func boundedSessions(ctx context.Context, ex *executor.Executor) (map[string]*time.Time, error) {
	ss, err := ex.ListSessions(ctx, "")
	if err != nil {
		return nil, err
	}
	out := map[string]*time.Time{}
	seen := map[string]bool{}
	for _, s := range ss { // newest first
		if seen[s.TaskID] {
			continue
		}
		seen[s.TaskID] = true
		if s.MaxRuntimeAt != nil && !s.State.Ended() {
			out[s.TaskID] = s.MaxRuntimeAt
		}
	}
	return out, nil
}

// archiveText says when sweep archives an idle task.
func archiveText(at, now time.Time) string {
	if !now.Before(at) {
		return " (archived by the next sweep)"
	}
	return " (archived by sweep in " + at.Sub(now).Round(time.Minute).String() + ")"
}
