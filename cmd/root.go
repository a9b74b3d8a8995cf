// Package cmd is the kandev-exec command tree.
package cmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/agent"
	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/helper"
	"github.com/kdlbs/kandev-exec/cmd/host"
	"github.com/kdlbs/kandev-exec/cmd/profile"
	"github.com/kdlbs/kandev-exec/cmd/reclaim"
	"github.com/kdlbs/kandev-exec/cmd/secret"
	"github.com/kdlbs/kandev-exec/cmd/session"
	"github.com/kdlbs/kandev-exec/cmd/store"
	"github.com/kdlbs/kandev-exec/cmd/sweep"
	"github.com/kdlbs/kandev-exec/cmd/task"
	"github.com/kdlbs/kandev-exec/cmd/watch"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/internal/buildinfo"
	"github.com/kdlbs/kandev-exec/internal/quietterm"
)

// NewCmdRoot builds the whole tree over f.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "kandev-exec",
		Short:         "Run coding-agent tasks on SSH hosts you own",
		Long:          "kandev-exec runs coding-agent tasks on machines a team already owns, over SSH,\nand cleans up after itself only when it can prove nothing of value is lost.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	// No other command sets a persistent pre-run: this one runs for all.
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return f.SetupFilter() }
	f.AddGlobalFlags(root.PersistentFlags())
	root.SetFlagErrorFunc(cmdutil.FlagErrorFunc)
	root.AddCommand(host.NewCmdHost(f))
	root.AddCommand(profile.NewCmdProfile(f))
	root.AddCommand(agent.NewCmdAgent(f))
	root.AddCommand(secret.NewCmdSecret(f))
	root.AddCommand(task.NewCmdTask(f))
	root.AddCommand(session.NewCmdSession(f))
	root.AddCommand(sweep.NewCmdSweep(f, nil))
	root.AddCommand(watch.NewCmdWatch(f, nil))
	root.AddCommand(store.NewCmdStore(f))
	root.AddCommand(reclaim.NewCmdReclaim(f, nil))
	root.AddCommand(helper.NewCmdHelper(f))
	root.AddCommand(newCmdVersion(f, nil))
	root.AddCommand(newCmdDoctor(f, nil))
	root.AddCommand(newCmdCompletion(f))
	root.AddCommand(newCmdServe(), newCmdController())
	root.SetHelpCommand(newCmdHelp(root, f))
	cmdutil.RequireSubcommands(root)
	return root
}

// Execute runs the CLI and returns the process exit code.
func Execute() int {
	quietterm.Restore()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, cmdutil.System(), os.Args[1:])
}

// run runs the command line args over io and returns the exit code.
func run(ctx context.Context, io *cmdutil.IOStreams, args []string) int {
	f := cmdutil.NewFactory(io, buildinfo.Version)
	defer f.Close()
	root := NewCmdRoot(f)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	// Ctrl-C interrupts, except where it only stops watching work that
	// goes on in the background (host drain): that says so, exit 8. An
	// interrupted launch says what it stopped on the host.
	if err != nil && ctx.Err() != nil && !errors.Is(err, cmdutil.ErrInterrupted) && cmdutil.Classify(err).Exit != cmdutil.ExitPending.Status &&
		!errors.As(err, new(*executor.InterruptedError)) {
		err = cmdutil.ErrInterrupted
	}
	if err == nil {
		return 0
	}
	cmdutil.PrintError(io, err, f.JSON() || cmdutil.WantsJSON(cmd, args))
	return cmdutil.Classify(err).Exit
}
