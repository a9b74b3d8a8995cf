package task

import (
	"context"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// warnUnmasked runs `profile env`'s preflight over the environment a
// launch or resume is about to get, and warns about the values too short
// to be masked. A failure is left to the launch, which reports it in its
// own words; with --json nothing is said (stderr holds only an error).
func warnUnmasked(ctx context.Context, ios *cmdutil.IOStreams, ex *executor.Executor, env executor.EnvOptions, asJSON bool) {
	if asJSON {
		return
	}
	entries, err := ex.ProfileEnv(ctx, env)
	if err != nil {
		return
	}
	cmdutil.WarnUnmasked(ios, entries)
}
