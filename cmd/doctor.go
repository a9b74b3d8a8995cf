package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/state"
)

type doctorOptions struct {
	IO    *cmdutil.IOStreams
	JSON  bool
	Input executor.DoctorInput
	// Store opens the store every command uses (--store).
	Store func() (state.Store, error)
}

func newCmdDoctor(f *cmdutil.Factory, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check ssh-agent, the ssh config, the state directory, stray secret files, scheduled sweeps and the store",
		Long: `Check ssh-agent, the ssh config, the state directory, stray secret files,
scheduled sweeps and the store, one line each: ok, warn or fail. The sweep
line warns when cleanup jobs are due and no ` + "`kandev-exec sweep`" + ` has gone
through them for a day (a timer or cron line should run it: README,
Scheduled sweeps). Exits 1 when a check fails; a warning alone exits 0.`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			u, err := cmdutil.ParseStoreURL(s.Store, s.StateDir)
			if err != nil {
				return err
			}
			opts := &doctorOptions{IO: f.IO, JSON: s.JSON, Store: f.Store,
				Input: executor.DoctorInput{StateDir: s.StateDir, SSHConfig: s.SSHConfig}}
			if !u.InStateDir(s.StateDir) {
				opts.Input.StoreName = u.String()
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return doctorRun(c.Context(), opts)
		},
	}
}

func doctorRun(ctx context.Context, o *doctorOptions) error {
	in := o.Input
	in.Store, in.StoreErr = o.Store()
	var fe *cmdutil.FlagError
	if errors.As(in.StoreErr, &fe) {
		return in.StoreErr // a setting to fix first, as every command says
	}
	checks := executor.Doctor(ctx, in)
	failed := 0
	for _, ch := range checks {
		if ch.Status == "fail" {
			failed++
		}
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(o.IO.Out, checks); err != nil {
			return err
		}
	} else {
		cs := o.IO.ColorScheme(o.IO.Out)
		for _, ch := range checks {
			// Pad before colouring: escape codes would skew the width.
			fmt.Fprintf(o.IO.Out, "%s  %-15s %s\n", cs.Status(fmt.Sprintf("%-4s", ch.Status)), ch.Name, ch.Detail)
		}
	}
	if failed > 0 {
		return &cmdutil.ExitCodeError{Code: 1, Msg: fmt.Sprintf("%d check(s) failed", failed)}
	}
	return nil
}
