package host

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// AddOptions are `host add`'s inputs.
type AddOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Host     executor.AddHostOptions
}

// NewCmdAdd is `host add NAME [flags]`.
func NewCmdAdd(f *cmdutil.Factory, runF func(context.Context, *AddOptions) error) *cobra.Command {
	opts := &AddOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a host (resolved through your ssh config; nothing is dialled)",
		Long: `Add a host: a name for an ssh config alias, with any settings given here
taking precedence over the config's. Nothing is dialled. Adding a host again
with the same settings changes nothing; with other settings it is an error
naming them: ` + "`kandev-exec host set`" + ` changes a host.`,
		Example: `  kandev-exec host add prod --alias prod-box
  kandev-exec host add lab --hostname 10.0.0.5 --user dev --proxy-jump bastion`,
		Args: cmdutil.ExactArgs(1, "host add needs a NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Host.Name = args[0]
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return addRun(c.Context(), opts)
		},
	}
	hostFlags(c.Flags(), &opts.Host)
	return c
}

// hostFlags declares the settings `host add` and `host set` share.
func hostFlags(fl *pflag.FlagSet, h *executor.AddHostOptions) {
	fl.StringVar(&h.Alias, "alias", "", "ssh config alias to resolve (default NAME)")
	fl.StringVar(&h.HostName, "hostname", "", "address to connect to (overrides HostName)")
	fl.IntVar(&h.Port, "port", 0, "port (overrides Port)")
	fl.StringVar(&h.User, "user", "", "login user (overrides User)")
	fl.StringArrayVar(&h.IdentityFiles, "identity-file", nil, "private key file, tried before the config's (repeatable)")
	fl.BoolVar(&h.IdentitiesOnly, "identities-only", false, "offer only the identity files, even if the agent holds more keys")
	fl.StringVar(&h.ProxyJump, "proxy-jump", "", "jump hosts, like ssh -J (\"none\" disables the config's)")
	fl.StringVar(&h.WorkdirRoot, "workdir-root", "", "task root on the host: ~, ~/... or absolute (default ~/.kandev)")
}

func checkPort(port int) error {
	if port != 0 && (port < 1 || port > 65535) {
		return cmdutil.FlagErrorf("--port %d is out of range (1-65535)", port)
	}
	return nil
}

func addRun(ctx context.Context, o *AddOptions) error {
	if err := checkPort(o.Host.Port); err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	v, created, err := ex.AddHost(ctx, o.Host)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, v)
	}
	if !created {
		fmt.Fprintf(o.IO.Out, "Host %s unchanged (%s@%s:%d)\n", v.Name, v.User, v.Hostname, v.Port)
		return nil
	}
	fmt.Fprintf(o.IO.Out, "Added host %s (%s@%s:%d)\n", v.Name, v.User, v.Hostname, v.Port)
	fmt.Fprintf(o.IO.ErrOut, "Next: kandev-exec host test %s, then kandev-exec host trust %s\n", v.Name, v.Name)
	return nil
}
