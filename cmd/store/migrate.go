package store

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/state"
)

// MigrateOptions are `store migrate`'s inputs.
type MigrateOptions struct {
	IO   *cmdutil.IOStreams
	From string // the --store setting, as a URL
	To   string
	JSON bool
	// Executor works on the --store setting's store; Open opens the
	// target by URL.
	Executor func() (*executor.Executor, error)
	Open     func(ctx context.Context, url string) (state.Store, error)
}

// NewCmdMigrate is `store migrate`.
func NewCmdMigrate(f *cmdutil.Factory, runF func(context.Context, *MigrateOptions) error) *cobra.Command {
	opts := &MigrateOptions{IO: f.IO, Executor: f.Executor, Open: f.OpenStore}
	c := &cobra.Command{
		Use:   "migrate --to URL",
		Short: "Copy the store (--store) into another: file to etcd, etcd to file",
		Long: `Copy the store --store names (by default the local state directory) into the
store --to names: the journal with its epoch and sequence numbers, and every
record at its revision. The target must be empty or an earlier copy of the same
store: an interrupted migration resumes where it stopped, and running it again
once done changes nothing. Nothing may hold a claim meanwhile, and nothing
should write to the source: stop other kandev-exec processes first.

Secret values stay where they are (the local state directory): a shared store
holds only references to them.

URLs: file: (the state directory), file:/absolute/dir, or
etcd://host:2379[,host:2379...]/prefix with the store-* settings of the config
file for TLS and authentication.`,
		Example: `  kandev-exec store migrate --to etcd://etcd1:2379,etcd2:2379,etcd3:2379/kandev
  kandev-exec --store etcd://etcd1:2379/kandev store migrate --to file:/srv/backup/kandev`,
		Args: cmdutil.ExactArgs(0, "store migrate takes no arguments: give the target with --to URL"),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			if opts.To == "" {
				return cmdutil.FlagErrorf("store migrate needs --to URL: file:/dir or etcd://host:2379/prefix")
			}
			from, err := cmdutil.ParseStoreURL(s.Store, s.StateDir)
			if err != nil {
				return err
			}
			to, err := cmdutil.ParseStoreURL(opts.To, s.StateDir)
			if err != nil {
				return err
			}
			if from.String() == to.String() {
				return cmdutil.FlagErrorf("--to %s is the store being migrated (--store): name another", to)
			}
			opts.From, opts.To, opts.JSON = from.String(), to.String(), s.JSON
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return migrateRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.To, "to", "", "the store to copy into: file:/dir or etcd://host:2379[,...]/prefix")
	return c
}

// migrateResult is the --json output.
type migrateResult struct {
	From string `json:"from"`
	To   string `json:"to"`
	state.CopyReport
}

func migrateRun(ctx context.Context, o *MigrateOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	dst, err := o.Open(ctx, o.To)
	if err != nil {
		return err
	}
	defer dst.Close()
	fmt.Fprintf(o.IO.ErrOut, "Copying %s into %s\n", o.From, o.To)
	r, err := ex.MigrateStore(ctx, dst, func(format string, a ...any) {
		fmt.Fprintf(o.IO.ErrOut, "  "+format+"\n", a...)
	})
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, migrateResult{From: o.From, To: o.To, CopyReport: r})
	}
	fmt.Fprintf(o.IO.Out, "Journal: epoch %d, %d entries (%d copied now)\n", r.Epoch, r.JournalSeq, r.EntriesCopied)
	fmt.Fprintf(o.IO.Out, "Records: %d copied, %d already there, %d removed\n", r.RecordsCopied, r.RecordsUnchanged, r.RecordsRemoved)
	fmt.Fprintf(o.IO.ErrOut, "Use it with --store %s (or KANDEV_EXEC_STORE, or store: in the config file)\n", o.To)
	return nil
}
