// Package cmdtest runs one verb's command the way the CLI would, for the
// parsing tests of the cmd/<noun> packages: the verb's runF then sees
// the options it parsed, and nothing runs.
package cmdtest

import (
	"context"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// Run runs args through a root that holds the command build makes, with
// the global flags and the CLI's handling of a bad flag, over a state
// directory of the test's own; it returns the command's error.
func Run(t *testing.T, build func(*cmdutil.Factory) *cobra.Command, args ...string) error {
	t.Helper()
	t.Setenv("KANDEV_EXEC_STATE_DIR", t.TempDir())
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, "test")
	root := &cobra.Command{Use: "kandev-exec", SilenceErrors: true, SilenceUsage: true}
	f.AddGlobalFlags(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cmdutil.FlagError{Err: err} })
	root.AddCommand(build(f))
	root.SetArgs(args)
	return root.ExecuteContext(context.Background())
}

// Parsed runs args through the verb newCmd makes and returns the options
// its runF was given; an error, or a runF that never ran, fails t.
func Parsed[O any](t *testing.T, newCmd func(*cmdutil.Factory, func(context.Context, *O) error) *cobra.Command, args ...string) *O {
	t.Helper()
	var got *O
	err := Run(t, func(f *cmdutil.Factory) *cobra.Command {
		return newCmd(f, func(_ context.Context, o *O) error { got = o; return nil })
	}, args...)
	if err != nil || got == nil {
		t.Fatalf("%q: %v (runF ran: %v)", args, err, got != nil)
	}
	return got
}

// Refused fails t unless args are a usage error (exit 2) that never
// reaches the verb's runF.
func Refused[O any](t *testing.T, newCmd func(*cmdutil.Factory, func(context.Context, *O) error) *cobra.Command, args ...string) {
	t.Helper()
	ran := false
	err := Run(t, func(f *cmdutil.Factory) *cobra.Command {
		return newCmd(f, func(context.Context, *O) error { ran = true; return nil })
	}, args...)
	WantUsage(t, err)
	if ran {
		t.Errorf("%q: runF ran on bad usage", args)
	}
}

// WantUsage fails t unless err is a usage error.
func WantUsage(t *testing.T, err error) {
	t.Helper()
	if got := cmdutil.Classify(err).Exit; got != cmdutil.ExitUsage.Status {
		t.Errorf("got exit %d (%v), want a usage error", got, err)
	}
}
