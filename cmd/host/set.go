package host

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// SetOptions are `host set`'s inputs.
type SetOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
	Changes  executor.HostChanges
}

// NewCmdSet is `host set NAME [flags]`.
func NewCmdSet(f *cmdutil.Factory, runF func(context.Context, *SetOptions) error) *cobra.Command {
	opts := &SetOptions{IO: f.IO, Executor: f.Executor}
	var given executor.AddHostOptions
	c := &cobra.Command{
		Use:   "set NAME [flags]",
		Short: "Change a host's settings (a new address or port drops its pinned keys)",
		Long: `Change the settings of a host ` + "`host add`" + ` stored, with the same flags; only
those given change. An empty value clears a setting, so the ssh config
decides again (--hostname ""), and --identity-file "" clears the key files.

When the new settings lead elsewhere (the address or port of the host or of
any jump host differs) the pinned keys say nothing about the new endpoint:
they are dropped, and the host must be trusted again (` + "`host test`" + `, then
` + "`host trust`" + `). Status and tasks stay.`,
		Example: `  kandev-exec host set prod --hostname 10.0.0.7
  kandev-exec host set lab --proxy-jump bastion2 --user dev`,
		Args:              cmdutil.ExactArgs(1, "host set needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.JSON = args[0], f.JSON()
			opts.Changes = changesOf(c, given)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return setRun(c.Context(), opts)
		},
	}
	hostFlags(c.Flags(), &given)
	return c
}

// changesOf keeps the flags given on the command line.
func changesOf(c *cobra.Command, h executor.AddHostOptions) executor.HostChanges {
	var ch executor.HostChanges
	given := c.Flags().Changed
	str := func(name string, v string) *string {
		if given(name) {
			return &v
		}
		return nil
	}
	ch.Alias, ch.HostName, ch.User = str("alias", h.Alias), str("hostname", h.HostName), str("user", h.User)
	ch.ProxyJump, ch.WorkdirRoot = str("proxy-jump", h.ProxyJump), str("workdir-root", h.WorkdirRoot)
	if given("port") {
		ch.Port = &h.Port
	}
	if given("identity-file") {
		files := slices.DeleteFunc(slices.Clone(h.IdentityFiles), func(f string) bool { return f == "" })
		ch.IdentityFiles = &files
	}
	if given("identities-only") {
		ch.IdentitiesOnly = &h.IdentitiesOnly
	}
	return ch
}

func setRun(ctx context.Context, o *SetOptions) error {
	if o.Changes.Port != nil {
		if err := checkPort(*o.Changes.Port); err != nil {
			return err
		}
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.SetHost(ctx, o.Name, o.Changes)
	if err != nil {
		return err
	}
	v := res.Host
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, v)
	}
	if len(res.Changed) == 0 {
		fmt.Fprintf(o.IO.Out, "Host %s unchanged (%s@%s:%d)\n", v.Name, v.User, v.Hostname, v.Port)
		return nil
	}
	fmt.Fprintf(o.IO.Out, "Updated host %s: %s (%s@%s:%d)\n", v.Name, strings.Join(res.Changed, ", "), v.User, v.Hostname, v.Port)
	if res.PinsDropped {
		fmt.Fprintf(o.IO.ErrOut, "Its address changed, so its pinned host keys were dropped: kandev-exec host test %s, then kandev-exec host trust %s\n", v.Name, v.Name)
	}
	return nil
}
