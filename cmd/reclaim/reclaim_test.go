package reclaim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/ssh"
)

func run(t *testing.T, runF func(context.Context, *Options) error, args ...string) error {
	t.Helper()
	return cmdtest.Run(t, func(f *cmdutil.Factory) *cobra.Command { return NewCmdReclaim(f, runF) }, args...)
}

func TestNewCmdReclaim(t *testing.T) {
	var got *Options
	runF := func(_ context.Context, o *Options) error { got = o; return nil }
	if err := run(t, runF, "reclaim", "--host", "prod", "--older-than", "72h", "--apply", "--plan", "p.json", "--yes", "--json"); err != nil {
		t.Fatal(err)
	}
	if got.Host != "prod" || got.OlderThan != 72*time.Hour || !got.Apply || got.PlanFile != "p.json" || !got.Yes || !got.JSON {
		t.Fatalf("parsed %+v", got)
	}
	got = nil
	for _, args := range [][]string{
		{"reclaim", "--plan", "p.json"},
		{"reclaim", "--older-than", "-1h"},
		{"reclaim", "extra"},
	} {
		if err := run(t, runF, args...); cmdutil.Classify(err).Exit != cmdutil.ExitUsage.Status {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	if got != nil {
		t.Fatal("runF ran on bad usage")
	}
}

// Nothing failed is 0; some rows failed and others not is 3; every row
// failed with one class is that class (a single unreachable host is 7).
func TestOutcome(t *testing.T) {
	unreachable := &ssh.Error{Class: ssh.ClassNetwork, Err: errors.New("refused")}
	ok := executor.ReclaimRow{Host: "a", Action: executor.ReclaimRemoved}
	down := executor.ReclaimRow{Host: "b", Action: executor.ReclaimFailed, Err: unreachable, Detail: "b: refused"}
	failedDir := executor.ReclaimRow{Host: "a", Action: executor.ReclaimFailed, Reason: "remove_failed"}
	for _, c := range []struct {
		rows []executor.ReclaimRow
		exit int
	}{
		{nil, 0},
		{[]executor.ReclaimRow{ok, {Host: "a", Action: executor.ReclaimSkipped}}, 0},
		{[]executor.ReclaimRow{ok, down}, 3},
		{[]executor.ReclaimRow{ok, failedDir}, 3},
		{[]executor.ReclaimRow{down}, 7},
		{[]executor.ReclaimRow{down, failedDir}, 1},
	} {
		if got := cmdutil.Classify(outcome(c.rows)).Exit; got != c.exit {
			t.Errorf("%+v: exit %d, want %d", c.rows, got, c.exit)
		}
	}
}

// A directory's row that failed with an error (its apply interrupted
// before the host answered) used to print "-" for its task, size and
// age, which it has as listed; a host's failure, naming no directory,
// still prints them as "-".
func TestPrintRowsKeepsAFailedDirectorysColumns(t *testing.T) {
	var b strings.Builder
	printRows(&b, []executor.ReclaimRow{
		{Host: "prod", Path: "/w/tasks/t1", Root: "/w", Dir: "t1", TaskID: "t1", Bytes: 2048, AgeSeconds: 7200,
			Action: executor.ReclaimFailed, Reason: "interrupted", Detail: "interrupted", Err: cmdutil.ErrInterrupted},
		{Host: "down", Action: executor.ReclaimFailed, Reason: "unreachable", Err: errors.New("refused")},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := [][]string{
		{"prod", "/w/tasks/t1", "t1", "2.0", "KiB", "2h", "failed", "interrupted", "-"},
		{"down", "-", "-", "-", "-", "failed", "unreachable", "-"},
	}
	if len(lines) != 1+len(want) {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, w := range want {
		if got := strings.Fields(lines[i+1]); !slices.Equal(got, w) {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}
}
