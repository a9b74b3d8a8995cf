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

// NewCmdTrust is `host trust NAME [--fingerprint SHA256:...|--accept-new] [--replace]`.
func NewCmdTrust(f *cmdutil.Factory, runF func(context.Context, *TrustOptions) error) *cobra.Command {
	opts := &TrustOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "trust NAME",
		Short: "Pin the host key of a host and of every jump host",
		Long: `Dial the host and pin the SHA256 fingerprint and key type of the host and of
every ProxyJump hop. Every later connection fails closed if a key differs.

On a terminal each new key is shown and must be confirmed. Without one, a
key is pinned only by --fingerprint (checked against what the host presents:
get it out of band) or by --accept-new. --yes and KANDEV_EXEC_YES never pin
a key. Replacing a pinned key that changed needs --replace, and is confirmed
the same way.`,
		Example: `  kandev-exec host trust prod --fingerprint SHA256:...    # the key you checked out of band
  kandev-exec host trust far --fingerprint SHA256:hop... --fingerprint SHA256:target...
  kandev-exec host trust lab --accept-new                 # trust on first use: see --accept-new`,
		Args:              cmdutil.ExactArgs(1, "host trust needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			opts.Trust.Name, opts.JSON = args[0], s.JSON
			for _, fp := range opts.Trust.Fingerprints {
				if !strings.HasPrefix(fp, "SHA256:") {
					return cmdutil.FlagErrorf("--fingerprint %q: expected the SHA256:... form that `host test` prints", fp)
				}
			}
			named := len(opts.Trust.Fingerprints) > 0
			switch {
			case named && opts.Trust.AcceptNew:
				return cmdutil.FlagErrorf("--fingerprint and --accept-new exclude each other: name every hop's key, or accept them all unchecked")
			case !named && !opts.Trust.AcceptNew && !f.IO.CanPrompt():
				return cmdutil.WithHint(cmdutil.FlagErrorf("--fingerprint or --accept-new required to pin the host key of %s when not running interactively; --yes never trusts a key", args[0]),
					fmt.Sprintf("`kandev-exec host test %s` shows the key; compare it with one you got out of band, then `kandev-exec host trust %s --fingerprint SHA256:...`", args[0], args[0]))
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return trustRun(c.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Trust.Fingerprints, "fingerprint", nil, "expected SHA256 fingerprint (repeatable: one per hop)")
	c.Flags().BoolVar(&opts.Trust.AcceptNew, "accept-new", false,
		"pin the keys presented now without checking them: trust on first use, so whoever answers this connection (an attacker in the path too) gets pinned")
	c.Flags().BoolVar(&opts.Trust.Replace, "replace", false, "replace a pinned key that changed (confirmed like a new one)")
	return c
}

func trustRun(ctx context.Context, o *TrustOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if o.IO.CanPrompt() && len(o.Trust.Fingerprints) == 0 && !o.Trust.AcceptNew {
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
