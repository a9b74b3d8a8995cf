package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

type doctorOptions struct {
	IO    *cmdutil.IOStreams
	JSON  bool
	Input executor.DoctorInput
	// Etcd, when --store names an etcd store, is how to reach it.
	Etcd *etcdstore.Config
}

func newCmdDoctor(f *cmdutil.Factory, runF func(*doctorOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check ssh-agent, the ssh config, the state directory, stray secret files and an etcd store",
		Args:  cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			opts := &doctorOptions{IO: f.IO, JSON: s.JSON,
				Input: executor.DoctorInput{StateDir: s.StateDir, SSHConfig: s.SSHConfig, LockTimeout: s.LockTimeout}}
			cfg, isEtcd, err := f.EtcdConfig()
			if err != nil {
				return err
			}
			if isEtcd {
				opts.Etcd = &cfg
			}
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(c, opts)
		},
	}
}

func doctorRun(c *cobra.Command, o *doctorOptions) error {
	checks := executor.Doctor(c.Context(), o.Input)
	if o.Etcd != nil {
		// The state dir stays in use beside a shared store: secret values
		// and caches are local.
		for _, f := range etcdstore.Diagnose(c.Context(), *o.Etcd) {
			checks = append(checks, executor.Check{Name: f.Name, Status: f.Status, Detail: f.Detail})
		}
	}
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
