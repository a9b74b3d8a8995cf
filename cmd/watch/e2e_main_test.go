package watch_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/host"
	"github.com/kdlbs/kandev-exec/cmd/watch"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/tui"
)

// The test binary doubles as `kandev-exec watch` in a real terminal
// (tmux): with KANDEV_WATCH_E2E=1 it runs the watch command with the
// executor's actions, which KANDEV_WATCH_E2E_PANIC makes panic, and with
// KANDEV_WATCH_E2E_NOW a fixed clock (fixClock), instead of running the
// tests; and `host drain --worker`, which a drain from the
// view starts. The view handles its signals itself (tui.Run); the CLI's
// own wiring is tested on the real binary, in cmd.
func TestMain(m *testing.M) {
	if os.Getenv("KANDEV_WATCH_E2E") == "1" {
		os.Exit(e2eMain())
	}
	os.Exit(m.Run())
}

func e2eMain() int {
	ios := cmdutil.System()
	f := cmdutil.NewFactory(ios, "e2e")
	defer f.Close()
	root := &cobra.Command{Use: "kandev-exec", SilenceUsage: true, SilenceErrors: true}
	f.AddGlobalFlags(root.PersistentFlags())
	root.AddCommand(watch.NewCmdWatch(f, func(ctx context.Context, o *watch.WatchOptions) error {
		actions := o.Actions
		o.Actions = func(ex *executor.Executor) tui.Actions {
			return &explodingActions{Actions: actions(ex), panics: os.Getenv("KANDEV_WATCH_E2E_PANIC")}
		}
		if at := os.Getenv("KANDEV_WATCH_E2E_NOW"); at != "" {
			if err := fixClock(o, at); err != nil {
				return err
			}
		}
		return watch.Run(ctx, o)
	}), host.NewCmdHost(f))
	root.SetArgs(os.Args[1:])
	if err := root.ExecuteContext(context.Background()); err != nil {
		cmdutil.PrintError(ios, err, false)
		return cmdutil.Classify(err).Exit
	}
	return 0
}

// fixClock makes what the view shows the same on every run, for goldens:
// its clock stops at at (RFC 3339), and the store it reads and its
// actions write journals at one second past at per write, from at.
func fixClock(o *watch.WatchOptions, at string) error {
	now, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return err
	}
	o.Now = func() time.Time { return now }
	st, err := state.Open(os.Getenv("KANDEV_EXEC_STATE_DIR"), state.Options{Now: watch.Ticking(now)})
	if err != nil {
		return err
	}
	ex := executor.New(executor.Config{Store: st, StateDir: os.Getenv("KANDEV_EXEC_STATE_DIR")})
	o.Executor = func() (*executor.Executor, error) { return ex, nil }
	return nil
}

// explodingActions are the executor's, except that with panics "action"
// a cordon panics (in the view's command), and with "update" it fails
// with an error that panics when the view reads it (in the view's Update).
type explodingActions struct {
	tui.Actions
	panics string
}

type explodingError struct{}

func (explodingError) Error() string { panic("error exploded") }

func (a *explodingActions) Cordon(ctx context.Context, host, reason string) error {
	switch a.panics {
	case "action":
		panic("cordon exploded")
	case "update":
		return explodingError{}
	}
	return a.Actions.Cordon(ctx, host, reason)
}
