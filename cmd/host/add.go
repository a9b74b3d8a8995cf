package host

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

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
	fl := c.Flags()
	fl.StringVar(&opts.Host.Alias, "alias", "", "ssh config alias to resolve (default NAME)")
	fl.StringVar(&opts.Host.HostName, "hostname", "", "address to connect to (overrides HostName)")
	fl.IntVar(&opts.Host.Port, "port", 0, "port (overrides Port)")
	fl.StringVar(&opts.Host.User, "user", "", "login user (overrides User)")
	fl.StringArrayVar(&opts.Host.IdentityFiles, "identity-file", nil, "private key file, tried before the config's (repeatable)")
	fl.BoolVar(&opts.Host.IdentitiesOnly, "identities-only", false, "offer only the identity files, even if the agent holds more keys")
	fl.StringVar(&opts.Host.ProxyJump, "proxy-jump", "", "jump hosts, like ssh -J (\"none\" disables the config's)")
	fl.StringVar(&opts.Host.WorkdirRoot, "workdir-root", "", "task root on the host: ~, ~/... or absolute (default ~/.kandev)")
	return c
}

func addRun(ctx context.Context, o *AddOptions) error {
	if o.Host.Port != 0 && (o.Host.Port < 1 || o.Host.Port > 65535) {
		return cmdutil.FlagErrorf("--port %d is out of range (1-65535)", o.Host.Port)
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	v, err := ex.AddHost(ctx, o.Host)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, v)
	}
	fmt.Fprintf(o.IO.Out, "Added host %s (%s@%s:%d)\n", v.Name, v.User, v.Hostname, v.Port)
	fmt.Fprintf(o.IO.ErrOut, "Next: kandev-exec host test %s, then kandev-exec host trust %s\n", v.Name, v.Name)
	return nil
}
