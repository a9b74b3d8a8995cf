package watch

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// Flags reach WatchOptions as given, and bad ones are usage errors
// (exit 2) naming the flag, before anything is read.
func TestNewCmdWatch(t *testing.T) {
	cases := []struct {
		args    string
		want    WatchOptions
		stops   bool
		errText string
	}{
		{args: "", want: WatchOptions{Since: -1}},
		{args: "--host web-1 --no-tui", want: WatchOptions{Host: "web-1", NoTUI: true, Since: -1}},
		{args: "--task t1 --since 0 --until archived", want: WatchOptions{Task: "t1", Since: 0, Until: "archived"}, stops: true},
		{args: "--since 42 --json --read-only", want: WatchOptions{Since: 42, JSON: true, ReadOnly: true}},
		{args: "--claims --no-tui", want: WatchOptions{Since: -1, Claims: true, NoTUI: true}},
		{args: "--host a --task b", errText: "give --host or --task, not both"},
		{args: "--since -3", errText: "--since -3: give a sequence number, 0 or more"},
		{args: "--until done", errText: `--until "done" is not a phase or status; one of: absent, admitted,`},
		{args: "extra", errText: `watch takes no arguments (got "extra")`},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			ios, _, _, _ := cmdutil.Test()
			f := cmdutil.NewFactory(ios, "test")
			var got *WatchOptions
			cmd := NewCmdWatch(f, func(_ context.Context, o *WatchOptions) error { got = o; return nil })
			f.AddGlobalFlags(cmd.PersistentFlags())
			cmd.SetArgs(strings.Fields(c.args))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if c.errText != "" {
				if err == nil || !strings.Contains(err.Error(), c.errText) || cmdutil.Classify(err).Exit != 2 {
					t.Fatalf("err %v (exit %d), want exit 2 with %q", err, cmdutil.Classify(err).Exit, c.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Host != c.want.Host || got.Task != c.want.Task || got.Since != c.want.Since || got.Until != c.want.Until ||
				got.NoTUI != c.want.NoTUI || got.JSON != c.want.JSON || got.ReadOnly != c.want.ReadOnly || got.Claims != c.want.Claims ||
				(got.Stop != nil) != c.stops {
				t.Fatalf("options %+v", *got)
			}
		})
	}
}

// The view paints only on a terminal, and never under NO_COLOR or
// --no-color.
func TestRendererHonoursNoColor(t *testing.T) {
	cases := []struct {
		name    string
		env     bool
		args    []string
		profile termenv.Profile
	}{
		{"terminal", false, nil, termenv.ANSI},
		{"NO_COLOR", true, nil, termenv.Ascii},
		{"--no-color", false, []string{"--no-color"}, termenv.Ascii},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env {
				t.Setenv("NO_COLOR", "1")
			}
			t.Setenv("KANDEV_EXEC_STATE_DIR", t.TempDir())
			ios, _, _, _ := cmdutil.Test()
			ios.SetTTY(true, true, true)
			f := cmdutil.NewFactory(ios, "test")
			var got *WatchOptions
			cmd := NewCmdWatch(f, func(_ context.Context, o *WatchOptions) error {
				got = o
				_, err := o.Executor() // reads the settings, as Run does first
				return err
			})
			f.AddGlobalFlags(cmd.PersistentFlags())
			cmd.SetArgs(c.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if p := renderer(got.IO).ColorProfile(); p != c.profile {
				t.Fatalf("profile %v, want %v", p, c.profile)
			}
		})
	}
}
