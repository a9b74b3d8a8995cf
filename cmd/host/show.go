package host

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// ShowOptions are `host show`'s inputs.
type ShowOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
}

// NewCmdShow is `host show NAME`.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Executor: f.Executor}
	return cmdutil.NewShowCmd(f, "host", "Show one host: how it is reached and what is pinned", cmdutil.CompleteNames(f, 1, hostNames),
		&opts.Name, &opts.JSON, cmdutil.Seam(opts, runF, showRun))
}

func showRun(ctx context.Context, o *ShowOptions) error {
	return cmdutil.ShowVerb[executor.HostView]{Show: (*executor.Executor).ShowHost, Text: printHost}.Run(ctx, o.IO, o.Executor, o.JSON, o.Name)
}

// printHost is `host show` without --json.
func printHost(ios *cmdutil.IOStreams, h executor.HostView) error {
	w := ios.Out
	fmt.Fprintf(w, "name:         %s\n", h.Name)
	fmt.Fprintf(w, "alias:        %s\n", h.Alias)
	fmt.Fprintf(w, "address:      %s:%d\n", h.Hostname, h.Port)
	fmt.Fprintf(w, "user:         %s\n", h.User)
	fmt.Fprintf(w, "proxy jump:   %s\n", cmdutil.Dash(h.ProxyJump))
	for i, j := range h.ProxyJumpHops {
		fmt.Fprintf(w, "%-14s%s (%s)\n", fmt.Sprintf("hop %d:", i+1), j.Destination, j.Name)
	}
	fmt.Fprintf(w, "workdir root: %s\n", h.WorkdirRoot)
	fmt.Fprintf(w, "added:        %s\n", cmdutil.Ago(h.CreatedAt))
	fmt.Fprintf(w, "status:       %s\n", h.Status)
	if h.StatusReason != "" && h.StatusAt != nil {
		fmt.Fprintf(w, "reason:       %s\n", cmdutil.SafeText(h.StatusReason))
		fmt.Fprintf(w, "by:           %s at %s\n", cmdutil.SafeText(h.StatusBy), cmdutil.Timestamp(*h.StatusAt))
	}
	if h.StatusUntil != nil {
		fmt.Fprintf(w, "until:        %s\n", cmdutil.Timestamp(*h.StatusUntil))
	}
	printDrain(w, h)
	switch h.Trust {
	case "ca":
		fmt.Fprintf(w, "trust:        the CA %s (any host key it certified for the host's name)\n", h.CAFingerprint)
	case "pin":
		fmt.Fprintf(w, "trust:        its pinned key\n")
	}
	if len(h.Pins) == 0 {
		fmt.Fprintf(w, "pins:         none (run `kandev-exec host test %s`, then `kandev-exec host trust %s`)\n", h.Name, h.Name)
	}
	for _, p := range h.Pins {
		if p.CAFingerprint != "" {
			fmt.Fprintf(w, "ca:           %s  %s\n", p.Hop, p.CAFingerprint)
			continue
		}
		fmt.Fprintf(w, "pin:          %s  %s %s\n", p.Hop, p.KeyType, p.Fingerprint)
	}
	if h.ResolveError != "" {
		fmt.Fprintf(ios.ErrOut, "warning: cannot resolve %s right now: %s\n", h.Name, h.ResolveError)
	}
	return nil
}

// printDrain shows the host's last drain: where it stands, who started
// it, and the sessions it has not stopped yet.
func printDrain(w io.Writer, h executor.HostView) {
	d := h.Drain
	if d == nil {
		return
	}
	fmt.Fprintf(w, "drain:        %s (started %s by %s, deadline %s)\n", d.State, cmdutil.Timestamp(d.StartedAt),
		cmdutil.SafeText(d.By), cmdutil.Timestamp(d.Deadline))
	if d.State == records.DrainRunning {
		fmt.Fprintf(w, "drain log:    %s (worker pid %d)\n", d.Log, d.WorkerPID)
	}
	if d.Last != "" {
		fmt.Fprintf(w, "drain step:   %s\n", cmdutil.SafeText(d.Last))
	}
	for _, l := range d.Remaining {
		fmt.Fprintf(w, "still running: session %s (task %s): %s\n", l.Session, l.TaskID, cmdutil.SafeText(l.Why))
	}
}
