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
		Short: "Pin the host key of a host and of every jump host, or trust them through a CA",
		Long: `Dial the host and pin the SHA256 fingerprint and key type of the host and of
every ProxyJump hop. Every later connection fails closed if a key differs.
A host certificate is pinned as the key it certifies (what ssh-keygen -lf
prints), so a renewed certificate is no key change.

On a terminal each new key is shown and must be confirmed. Without one, a
key is pinned only by --fingerprint (checked against what the host presents:
get it out of band) or by --accept-new. --yes and KANDEV_EXEC_YES never pin
a key. Replacing a pinned key that changed needs --replace, and is confirmed
the same way.

--ca-fingerprint trusts the host, and every hop not trusted yet, through a
certificate authority instead: any host key that CA certified for the hop's
own name (HostKeyAlias, else HostName), valid now and not revoked. A hop a
--fingerprint names is pinned by that key instead. Like --fingerprint it
needs no terminal; moving a trusted host to a CA needs --replace.`,
		Example: `  kandev-exec host trust prod --fingerprint SHA256:...    # the key you checked out of band
  kandev-exec host trust far --fingerprint SHA256:hop... --fingerprint SHA256:target...
  kandev-exec host trust fleet-7 --ca-fingerprint SHA256:...   # whatever key your host CA certified for it
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
			ca := opts.Trust.CAFingerprint
			if ca != "" && !strings.HasPrefix(ca, "SHA256:") {
				return cmdutil.FlagErrorf("--ca-fingerprint %q: expected the SHA256:... form (`ssh-keygen -lf ca.pub` prints it; `host test --json` shows a certificate's)", ca)
			}
			named := len(opts.Trust.Fingerprints) > 0 || ca != ""
			switch {
			case ca != "" && opts.Trust.AcceptNew:
				return cmdutil.FlagErrorf("--ca-fingerprint and --accept-new exclude each other: trust the CA, or accept every key unchecked")
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
	c.Flags().BoolVar(&opts.Trust.Replace, "replace", false, "replace a pinned key that changed (confirmed like a new one), or what a host is trusted by")
	c.Flags().StringVar(&opts.Trust.CAFingerprint, "ca-fingerprint", "", "trust every host key this CA (SHA256:...) certified for the host's name, instead of one key")
	return c
}

func trustRun(ctx context.Context, o *TrustOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if o.IO.CanPrompt() && len(o.Trust.Fingerprints) == 0 && !o.Trust.AcceptNew && o.Trust.CAFingerprint == "" {
		o.Trust.Confirm = func(ch executor.TrustChange) (bool, error) {
			if ch.Old != nil {
				fmt.Fprintf(o.IO.ErrOut, "%s: the pinned key changed\n  old: %s\n  new: %s\n", ch.Hop, ch.Old, ch.New)
				return o.IO.Confirm("Replace the pinned key?")
			}
			return o.IO.Confirm(fmt.Sprintf("Trust %s for %s?", ch.New, ch.Hop))
		}
	}
	res, err := ex.TrustHost(ctx, o.Trust)
	if res.Name == "" {
		return err
	}
	// What was trusted stands even when logging in failed after it.
	if o.JSON {
		if jerr := cmdutil.WriteJSON(o.IO.Out, res); jerr != nil {
			return jerr
		}
		return err
	}
	for _, ch := range res.Changes {
		fmt.Fprintln(o.IO.Out, trustLine(ch))
	}
	return err
}

// trustLine is one hop's change, as `host trust` prints it.
func trustLine(ch executor.TrustChange) string {
	was := ""
	switch {
	case ch.OldCAFingerprint != "":
		was = "the CA " + ch.OldCAFingerprint
	case ch.Old != nil:
		was = ch.Old.String()
	}
	now := ch.New.String()
	if ch.CAFingerprint != "" {
		presents := ch.New.String()
		if c := ch.Cert; c != nil {
			presents += ", certified for " + strings.Join(c.Principals, ",")
			if c.ValidBefore != nil {
				presents += " until " + cmdutil.Timestamp(*c.ValidBefore)
			}
		}
		now = fmt.Sprintf("through the CA %s (it presents %s)", ch.CAFingerprint, presents)
	}
	switch ch.Action {
	case "replaced":
		return fmt.Sprintf("Replaced %s: old %s, new %s", ch.Hop, was, now)
	case "pinned":
		if ch.CAFingerprint != "" {
			return fmt.Sprintf("Trusted %s %s", ch.Hop, now)
		}
		return fmt.Sprintf("Pinned %s: %s", ch.Hop, now)
	}
	return fmt.Sprintf("Unchanged %s: %s", ch.Hop, now)
}
