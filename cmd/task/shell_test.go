package task

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
	"github.com/kdlbs/kandev-exec/executor"
)

// run runs one `task` command line with the verb's runF.
func run(t *testing.T, add func(*cmdutil.Factory) *cobra.Command, args ...string) error {
	t.Helper()
	return cmdtest.Run(t, func(f *cmdutil.Factory) *cobra.Command {
		task := &cobra.Command{Use: "task"}
		task.AddCommand(add(f))
		return task
	}, args...)
}

func TestNewCmdShell(t *testing.T) {
	var got *ShellOptions
	add := func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdShell(f, func(_ context.Context, o *ShellOptions) error { got = o; return nil })
	}
	if err := run(t, add, "task", "shell", "box"); err != nil || got == nil || got.ID != "box" {
		t.Fatalf("task shell box: %v, parsed %+v", err, got)
	}
	got = nil
	for _, args := range [][]string{{"task", "shell"}, {"task", "shell", "a", "b"}, {"task", "shell", "-t", "a"}} {
		if err := run(t, add, args...); cmdutil.Classify(err).Exit != cmdutil.ExitUsage.Status {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	if got != nil {
		t.Fatal("runF ran on bad usage")
	}
}

func TestNewCmdExec(t *testing.T) {
	var got *ExecOptions
	add := func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdExec(f, func(_ context.Context, o *ExecOptions) error { got = o; return nil })
	}
	for _, c := range []struct {
		args []string
		tty  bool
	}{
		{[]string{"task", "exec", "-t", "box", "--", "top", "-b"}, true},
		{[]string{"task", "exec", "box", "--tty", "--", "top", "-b"}, true},
		{[]string{"task", "exec", "box", "--", "top", "-b"}, false},
		{[]string{"task", "exec", "box", "--", "top", "-t"}, false}, // after --, -t is the command's
	} {
		got = nil
		if err := run(t, add, c.args...); err != nil || got == nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		want := []string{"top", c.args[len(c.args)-1]}
		if got.ID != "box" || got.TTY != c.tty || !slices.Equal(got.Command, want) {
			t.Errorf("%q parsed as %+v, want ID box, TTY %v, command %q", c.args, got, c.tty, want)
		}
	}
}

// Without a terminal on stdin, shell and exec -t are usage errors naming
// what to run instead, and the store is never opened: the executor is not
// asked for.
func TestNoTerminalIsUsage(t *testing.T) {
	noExecutor := func() (*executor.Executor, error) {
		t.Fatal("the executor was asked for without a terminal")
		return nil, nil
	}
	for _, c := range []struct {
		run  func(*cmdutil.IOStreams) error
		msg  string
		hint string
	}{
		{func(ios *cmdutil.IOStreams) error {
			return shellRun(context.Background(), &ShellOptions{IO: ios, Executor: noExecutor, ID: "box"})
		}, "task shell needs a terminal on stdin, and stdin is not one", "`kandev-exec task exec box -- CMD` runs a command without one"},
		{func(ios *cmdutil.IOStreams) error {
			return execRun(context.Background(), &ExecOptions{IO: ios, Executor: noExecutor, ID: "box", Command: []string{"tty"}, TTY: true})
		}, "task exec -t needs a terminal on stdin, and stdin is not one", "drop -t"},
	} {
		// Streams that claim a terminal but are no file are no terminal either.
		claimed, _, _, _ := cmdutil.Test()
		claimed.SetTTY(true, true, true)
		plain, _, _, _ := cmdutil.Test()
		for _, ios := range []*cmdutil.IOStreams{plain, claimed} {
			err := c.run(ios)
			info := cmdutil.Classify(err)
			if info.Exit != cmdutil.ExitUsage.Status || err.Error() != c.msg || !strings.Contains(info.Hint, c.hint) {
				t.Errorf("got exit %d %q (hint %q), want 2 %q with a hint naming %q", info.Exit, err, info.Hint, c.msg, c.hint)
			}
		}
	}
}
