// Package reclaim is `kandev-exec reclaim`: find the task directories
// this installation left on its hosts, and remove those proven safe.
package reclaim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// Options are `reclaim`'s inputs.
type Options struct {
	IO        *cmdutil.IOStreams
	Executor  func() (*executor.Executor, error)
	JSON      bool
	Yes       bool
	Host      string
	OlderThan time.Duration
	MinSize   sizeFlag
	Apply     bool
	PlanFile  string
	// IncludeUncheckable: directories that are no git checkout, named to
	// be removed all the same.
	IncludeUncheckable []string
	// Task: only this task's directory.
	Task string
}

// NewCmdReclaim is `reclaim [--host H] [--older-than D] [--apply [--plan FILE]]`.
func NewCmdReclaim(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "reclaim [--host=H] [--task=ID] [--older-than=D] [--apply]",
		Short: "Find task directories left on hosts, and remove those proven safe",
		Long: `List every <root>/tasks/ of every host (each root its host, profiles and
tasks use) and plan: a directory is a candidate when its .kandev/owner.json
names this installation and a task that no local record holds any more,
or whose task is archived. Anything else is listed and kept, with the
reason: another installation's marker or none, a name kandev-exec does not
make, a live task, a directory changed more recently than --older-than or
holding less than --min-size (sizes as du -h prints them: 512K, 1.5G), a
directory that is no git checkout (nothing proves its files saved; the
table says what it holds). An agent still running in a directory of ours
whose task no local record holds is listed as an orphaned agent (its
session, pid, age and command). The table's DETAIL says why a directory is
kept, and how a removed one was proven (ancestor, patch-id, squash).

The plan touches nothing. --apply removes the candidates, each proven safe
again on the host, now (ours, private, no link anywhere, every checkout
clean and its work upstream, the same directory the plan saw) and removed
without following any link; what the proof refuses is skipped with its
reason. Work is upstream when the task's repository, fetched now, has its
commits, or commits making the same changes (a rebase or cherry-pick), or
one commit making their combined change (a squash merge). Orphaned agents
are stopped first, each only once the host proves it again as session stop
does (its pid at the start time listed, its argv naming the session
directory, the marker still this installation's), then the directory is
decided; what cannot be proved is left running, and said.
--apply asks first on a terminal and needs --yes without one. With --yes
the listing itself removes the orphans unchanged for an hour that no agent
runs in, each proven the same; the rest follows once the local records
are read again (a task recorded meanwhile keeps its directory). With
--plan FILE (the output of reclaim --json) only what that plan marked for
removal, as it saw it, is removed. --include-uncheckable PATH removes a
directory the plan keeps as not_a_checkout all the same, after saying
what it holds; every other check still holds. With --task ID only that task's
directory is planned (and removed): an archived task whose profile does not
set reclaim_task_dir is removed this way.

An archived task whose directory is removed becomes absent. Exit 3 when
some directories or hosts failed and others did not. Ctrl-C during --apply
asks the host to stop: it finishes a directory it is emptying, gives one
renamed for its removal its name back, starts no other, and answers; every
row is printed, those not done failed as cancelled, and the exit is 130.`,
		Example: `  kandev-exec reclaim                                  # the plan, every host
  kandev-exec reclaim --host prod --older-than 72h
  kandev-exec reclaim --host prod --task t3kq7x2mbn4pa --apply
  kandev-exec reclaim --json > plan.json               # review it, then
  kandev-exec reclaim --apply --plan plan.json --yes
  kandev-exec reclaim --apply --include-uncheckable /srv/kandev/tasks/t2abc --yes`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			opts.JSON, opts.Yes = s.JSON, s.Yes
			if opts.OlderThan < 0 {
				return cmdutil.FlagErrorf("--older-than must not be negative, got %s", opts.OlderThan)
			}
			if opts.PlanFile != "" && !opts.Apply {
				return cmdutil.FlagErrorf("--plan applies a saved plan: it needs --apply")
			}
			if len(opts.IncludeUncheckable) > 0 && !opts.Apply {
				return cmdutil.FlagErrorf("--include-uncheckable names directories to remove: it needs --apply")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return reclaimRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Host, "host", "", "only this host")
	c.Flags().DurationVar(&opts.OlderThan, "older-than", 0, "only directories unchanged for at least this long")
	c.Flags().Var(&opts.MinSize, "min-size", "only directories holding at least this much (as du -h prints it: 512K, 1.5G)")
	c.Flags().StringVar(&opts.Task, "task", "", "only the directory of this task (its full ID)")
	c.Flags().BoolVar(&opts.Apply, "apply", false, "remove what the plan marks, each proven safe again first")
	c.Flags().StringVar(&opts.PlanFile, "plan", "", "with --apply: remove only what this saved plan (reclaim --json) marked, as it saw it")
	c.Flags().StringArrayVar(&opts.IncludeUncheckable, "include-uncheckable", nil, "with --apply: remove this directory (a path the plan keeps as not_a_checkout) all the same; repeatable")
	_ = c.RegisterFlagCompletionFunc("host", cmdutil.CompleteNames(f, 0, func(ex *executor.Executor, ctx context.Context) ([]string, error) {
		return ex.HostNames(ctx)
	}))
	return c
}

func reclaimRun(ctx context.Context, o *Options) error {
	var saved []executor.ReclaimRow
	if o.Apply {
		if !o.IO.CanPrompt() {
			// Never dial for a plan the user cannot be asked about.
			if err := cmdutil.ConfirmDestructive(o.IO, o.Yes, "", "apply the reclaim plan"); err != nil {
				return err
			}
		}
		var err error
		if o.PlanFile != "" {
			if saved, err = readPlan(o.PlanFile); err != nil {
				return err
			}
		}
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	progress := func(s string) {
		if !o.JSON {
			fmt.Fprintf(o.IO.ErrOut, "• %s\n", s)
		}
	}
	var confirmed *executor.ConfirmedApply
	if o.Apply && o.Yes && len(o.IncludeUncheckable) == 0 {
		// Nothing is asked between plan and apply: the listing carries
		// what it can of the apply. A path named to include is checked
		// against the plan first (checkIncluded), so not then.
		confirmed = &executor.ConfirmedApply{Saved: saved, Task: o.Task}
	}
	rows, err := ex.ReclaimPlan(ctx, executor.ReclaimOptions{Host: o.Host, OlderThan: o.OlderThan, MinSize: int64(o.MinSize),
		IncludeUncheckable: o.IncludeUncheckable, Confirmed: confirmed, Progress: progress})
	if err != nil {
		return err
	}
	if err := checkIncluded(o, rows); err != nil {
		return err
	}
	if saved != nil {
		rows = executor.RestrictToPlan(rows, saved)
	}
	if o.Task != "" {
		if rows, err = onlyTask(rows, o.Task, o.Host); err != nil {
			return err
		}
	}
	fillErrors(rows)
	if o.Apply {
		if rows, err = applyPlan(ctx, o, ex, rows, progress); err != nil {
			if rows != nil { // interrupted, say, after the listing removed
				_ = printOutput(o, rows)
			}
			return err
		}
	}
	if err := printOutput(o, rows); err != nil {
		return err
	}
	return outcome(rows)
}

// printOutput prints the rows as asked: JSON, or the table and its
// summary.
func printOutput(o *Options, rows []executor.ReclaimRow) error {
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, rows)
	}
	printRows(o.IO.Out, rows)
	printSummary(o.IO, rows, o.Apply)
	return nil
}

// applyPlan shows the plan and asks on a terminal, then applies it.
func applyPlan(ctx context.Context, o *Options, ex *executor.Executor, rows []executor.ReclaimRow, progress func(string)) ([]executor.ReclaimRow, error) {
	n, size, agents := 0, int64(0), 0
	for _, r := range rows {
		if r.Action == executor.ReclaimRemove {
			n++
			size += r.Bytes
		}
		agents += len(r.Running)
	}
	if (n > 0 || agents > 0) && !o.Yes {
		printRows(o.IO.ErrOut, rows)
		q := fmt.Sprintf("Remove %d directories (%s)? Each is proven safe again, on its host, before it is removed.", n, cmdutil.Bytes(size))
		if agents > 0 {
			q = fmt.Sprintf("Stop %d orphaned agents, then remove %d directories (%s)? Each agent and directory is proven again, on its host, first.", agents, n, cmdutil.Bytes(size))
		}
		if err := cmdutil.ConfirmDestructive(o.IO, o.Yes, q, "apply the reclaim plan"); err != nil {
			return nil, err
		}
	}
	out, err := ex.ApplyReclaim(ctx, rows, progress)
	fillErrors(out)
	return out, err
}

// checkIncluded refuses an --include-uncheckable path the plan does not
// keep as not_a_checkout, and shows what each one named holds.
func checkIncluded(o *Options, rows []executor.ReclaimRow) error {
	for _, p := range o.IncludeUncheckable {
		i := slices.IndexFunc(rows, func(r executor.ReclaimRow) bool { return r.Uncheckable && r.Path == p })
		if i < 0 {
			return cmdutil.FlagErrorf("--include-uncheckable %s: the plan keeps no directory at that path as not_a_checkout; run `kandev-exec reclaim` to see the plan's paths", p)
		}
		if !o.JSON {
			fmt.Fprintf(o.IO.ErrOut, "• %s is not a git checkout, and will be removed as named; it holds %s\n",
				cmdutil.Safe(p), cmdutil.Safe(rows[i].HoldsText()))
		}
	}
	return nil
}

// readPlan reads a saved plan: what `reclaim --json` printed.
func readPlan(path string) ([]executor.ReclaimRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &cmdutil.FlagError{Err: fmt.Errorf("--plan: %w", err)}
	}
	defer f.Close()
	var rows []executor.ReclaimRow
	dec := json.NewDecoder(io.LimitReader(f, maxPlanSize))
	if err := dec.Decode(&rows); err != nil {
		return nil, cmdutil.FlagErrorf("--plan %s: not a saved plan (the JSON array `kandev-exec reclaim --json` prints): %v", path, err)
	}
	return rows, nil
}

// maxPlanSize bounds a saved plan: a million rows fit.
const maxPlanSize = 512 << 20

// fillErrors gives a failed host's row the code and message of its error.
func fillErrors(rows []executor.ReclaimRow) {
	for i := range rows {
		if r := &rows[i]; r.Err != nil {
			r.Reason, r.Detail = cmdutil.Classify(r.Err).Code, r.Err.Error()
		}
	}
}

// printRows prints the rows with what a host said escaped: a directory
// name may hold anything, a newline too.
func printRows(w io.Writer, rows []executor.ReclaimRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tPATH\tTASK\tSIZE\tAGE\tACTION\tREASON\tDETAIL")
	for _, r := range rows {
		if hostFailure(r) {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%s\t%s\t-\n", r.Host, cmdutil.Dash(cmdutil.Safe(r.Path)), r.Action, r.Reason)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Host, cmdutil.Safe(r.Path), cmdutil.Dash(cmdutil.Safe(r.TaskID)),
			cmdutil.Bytes(r.Bytes), humanAge(r.AgeSeconds), r.Action, cmdutil.Dash(r.Reason), rowDetail(r))
	}
	tw.Flush()
	printOrphans(w, rows)
}

// printOrphans lists the agents still running in directories no local
// record holds, and what --apply did about each.
func printOrphans(w io.Writer, rows []executor.ReclaimRow) {
	for _, r := range rows {
		for _, a := range r.Running {
			line := fmt.Sprintf("orphaned agent: %s session %s, pid %d, running %s: %s", r.Host, a.Session, a.PID, humanAge(a.AgeSeconds), cmdutil.SafeText(a.Command))
			switch {
			case a.Stopped:
				line += " (stopped)"
			case a.Left != "":
				line += " (left running: " + cmdutil.SafeText(a.Left) + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
}

// hostFailure: r is a host's or a root's failure, which names no
// directory. A directory's row that failed with an error (its apply
// interrupted, say) keeps its columns as listed.
func hostFailure(r executor.ReclaimRow) bool { return r.Err != nil && r.Dir == "" }

// rowDetail is a row's detail as the table shows it: how a removed
// directory was proven, what the host said, or, for one that failed
// with an error, nothing (the summary says it).
func rowDetail(r executor.ReclaimRow) string {
	if r.Err != nil {
		return "-"
	}
	if r.Proof != nil {
		return "proven: " + strings.Join(r.Proof.Methods(), ", ")
	}
	return cmdutil.Dash(cmdutil.Safe(r.Detail))
}

// printSummary says what the rows add up to, and for a plan what to run
// next; a failed host's error and hint follow.
func printSummary(ios *cmdutil.IOStreams, rows []executor.ReclaimRow, applied bool) {
	count := map[string]int{}
	size := map[string]int64{}
	for _, r := range rows {
		count[r.Action]++
		size[r.Action] += r.Bytes
	}
	switch {
	case len(rows) == 0:
		fmt.Fprintln(ios.ErrOut, "No task directories on these hosts")
	case applied:
		fmt.Fprintf(ios.ErrOut, "Removed %d directories (%s); kept %d; %d failed\n", count[executor.ReclaimRemoved], cmdutil.Bytes(size[executor.ReclaimRemoved]),
			count[executor.ReclaimSkipped], count[executor.ReclaimFailed])
	case count[executor.ReclaimRemove] > 0:
		fmt.Fprintf(ios.ErrOut, "Plan: remove %d directories (%s), keep %d; `kandev-exec reclaim --apply` removes each once it is proven safe again\n",
			count[executor.ReclaimRemove], cmdutil.Bytes(size[executor.ReclaimRemove]), count[executor.ReclaimKeep])
	default:
		fmt.Fprintf(ios.ErrOut, "Nothing to remove; keep %d\n", count[executor.ReclaimKeep])
	}
	printRootTotals(ios.ErrOut, rows)
	for _, r := range rows {
		if r.Action != executor.ReclaimFailed {
			continue
		}
		fmt.Fprintf(ios.ErrOut, "%s: %s\n", r.Host, cmdutil.SafeText(r.Detail))
		if r.Err != nil {
			if hint := cmdutil.Classify(r.Err).Hint; hint != "" {
				fmt.Fprintf(ios.ErrOut, "  hint: %s\n", cmdutil.SafeText(hint))
			}
		}
	}
}

// printRootTotals says how much each root's task directories hold, as
// listed (a removed directory's bytes included).
func printRootTotals(w io.Writer, rows []executor.ReclaimRow) {
	type root struct{ host, path string }
	var order []root
	count, size := map[root]int{}, map[root]int64{}
	for _, r := range rows {
		if hostFailure(r) {
			continue
		}
		k := root{r.Host, r.Root}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
		size[k] += r.Bytes
	}
	for _, k := range order {
		fmt.Fprintf(w, "%s %s: %d directories, %s\n", k.host, cmdutil.Safe(filepath.Join(k.path, "tasks")), count[k], cmdutil.Bytes(size[k]))
	}
}

// outcome: nothing failed is 0; some rows failed and others did not is
// 3; everything failed with one class is that class's code.
func outcome(rows []executor.ReclaimRow) error {
	failed, codes := 0, map[int]string{}
	var first executor.ReclaimRow
	for _, r := range rows {
		if r.Action != executor.ReclaimFailed {
			continue
		}
		if failed == 0 {
			first = r
		}
		failed++
		if r.Err != nil {
			info := cmdutil.Classify(r.Err)
			codes[info.Exit] = info.Code
		} else {
			codes[cmdutil.ExitError.Status] = cmdutil.ExitError.Code
		}
	}
	switch {
	case failed == 0:
		return nil
	case failed < len(rows):
		return &cmdutil.PartialError{Failed: failed, Total: len(rows), What: "rows"}
	case len(codes) == 1:
		for exit, code := range codes {
			return &cmdutil.ExitCodeError{Code: exit, JSON: code, Msg: first.Detail, Printed: true}
		}
	}
	return &cmdutil.ExitCodeError{Code: cmdutil.ExitError.Status, JSON: cmdutil.ExitError.Code, Msg: fmt.Sprintf("all %d rows failed", len(rows)), Printed: true}
}

func humanAge(s int64) string {
	d := time.Duration(s) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", s)
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// onlyTask keeps the rows of task id's directory, and those of hosts that
// could not be listed (the directory may be there).
func onlyTask(rows []executor.ReclaimRow, id, host string) ([]executor.ReclaimRow, error) {
	var kept []executor.ReclaimRow
	found := false
	for _, r := range rows {
		switch {
		case r.TaskID == id:
			kept, found = append(kept, r), true
		case r.Path == "" && r.Action == executor.ReclaimFailed:
			kept = append(kept, r)
		}
	}
	if !found && len(kept) == 0 {
		where := "on any host"
		if host != "" {
			where = "on " + host
		}
		return nil, fmt.Errorf("reclaim: no directory of task %s %s (`kandev-exec reclaim` lists every one)", id, where)
	}
	return kept, nil
}
