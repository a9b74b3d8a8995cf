package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// TrustOptions are `host trust`'s inputs.
type TrustOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Trust    executor.TrustOptions
}

// NewCmdTrust is `host trust NAME [--fingerprint SHA256:...] [--replace]`.
func NewCmdTrust(f *cmdutil.Factory, runF func(context.Context, *TrustOptions) error) *cobra.Command {
	opts := &TrustOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "trust NAME",
		Short: "Pin the host key of a host and of every jump host",
		Long: `Dial the host and pin the SHA256 fingerprint and key type of the host and of
every ProxyJump hop. Every later connection fails closed if a key differs.
Without a terminal, --fingerprint (checked against what the host presents)
or --yes is required. Replacing a pinned key needs --replace.`,
		Args:              cmdutil.ExactArgs(1, "host trust needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			opts.Trust.Name, opts.JSON, opts.Trust.Yes = args[0], s.JSON, opts.Trust.Yes || s.Yes
			for _, fp := range opts.Trust.Fingerprints {
				if !strings.HasPrefix(fp, "SHA256:") {
					return cmdutil.FlagErrorf("--fingerprint %q: expected the SHA256:... form that `host test` prints", fp)
				}
			}
			if len(opts.Trust.Fingerprints) == 0 && !opts.Trust.Yes && !f.IO.CanPrompt() {
				return cmdutil.FlagErrorf("--fingerprint or --yes required to trust %s when not running interactively (see `kandev-exec host test %s`)", args[0], args[0])
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return trustRun(c.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Trust.Fingerprints, "fingerprint", nil, "expected SHA256 fingerprint (repeatable: one per hop)")
	c.Flags().BoolVar(&opts.Trust.Replace, "replace", false, "replace a pinned key that changed")
	return c
}

func trustRun(ctx context.Context, o *TrustOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if o.IO.CanPrompt() && len(o.Trust.Fingerprints) == 0 && !o.Trust.Yes {
		o.Trust.Confirm = func(ch executor.TrustChange) (bool, error) {
			if ch.Old != nil {
				fmt.Fprintf(o.IO.ErrOut, "%s: the pinned key changed\n  old: %s\n  new: %s\n", ch.Hop, ch.Old, ch.New)
				return o.IO.Confirm("Replace the pinned key?")
			}
			return o.IO.Confirm(fmt.Sprintf("Trust %s for %s?", ch.New, ch.Hop))
		}
	}
	res, err := ex.TrustHost(ctx, o.Trust)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, res)
	}
	for _, ch := range res.Changes {
		switch ch.Action {
		case "replaced":
			fmt.Fprintf(o.IO.Out, "Replaced %s: old %s, new %s\n", ch.Hop, ch.Old, ch.New)
		case "pinned":
			fmt.Fprintf(o.IO.Out, "Pinned %s: %s\n", ch.Hop, ch.New)
		default:
			fmt.Fprintf(o.IO.Out, "Unchanged %s: %s\n", ch.Hop, ch.New)
		}
	}
	return nil
}
