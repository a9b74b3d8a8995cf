package host

import (
	"context"

	"github.com/kdlbs/kandev-exec/cmd/hostdrain"
	"github.com/kdlbs/kandev-exec/cmd/watch"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// drainEnds are the journal events a drain ends with.
var drainEnds = map[string]bool{}

func init() {
	for _, s := range []records.DrainState{records.DrainComplete, records.DrainDeadline, records.DrainCancelled, records.DrainFailed} {
		drainEnds["host.drain_"+string(s)] = true
	}
}

// watchDrain is --watch: the drain starts as without it, and its events
// are followed from the journal (the view scoped to the host on a
// terminal, which stays until quit; else the stream, up to the drain's
// end). The exit says how the drain stands: 0 complete, 8 still going or
// past its deadline.
func watchDrain(ctx context.Context, o *DrainOptions, ex *executor.Executor) error {
	since, err := watch.JournalEnd(ctx, ex.Store())
	if err != nil {
		return err
	}
	env, err := o.ChildEnv()
	if err != nil {
		return err
	}
	w, err := hostdrain.Start(ctx, ex, env, o.Name, o.Deadline)
	if err != nil {
		return err
	}
	stop := func(e state.Entry, _ records.Detail) bool {
		return e.Kind == records.KindHost && e.Name == o.Name && drainEnds[e.Type]
	}
	ferr := watch.Follow(ctx, o.Factory, records.Scope{Host: o.Name}, since, stop, nil)
	bg := context.WithoutCancel(ctx) // the drain's state is read even after Ctrl-C
	h, err := ex.ShowHost(bg, o.Name)
	if err != nil {
		return err
	}
	if h.Drain != nil && h.Drain.State == records.DrainRunning {
		// Quit or interrupted with the drain going: its worker (ours, or
		// an earlier drain's that holds the host) carries on.
		pid := w.PID
		select {
		case <-w.Exited:
			pid = 0
			if holder, err := ex.DrainWorker(bg, o.Name); err != nil {
				return err
			} else if holder != nil {
				pid = holder.PID
			}
		default:
		}
		if pid != 0 {
			return &executor.HostDrainPendingError{Host: o.Name, WorkerPID: pid, Log: w.Drain.Log}
		}
	}
	if ferr != nil && ctx.Err() == nil {
		return ferr
	}
	return drainOutcome(bg, o, ex, false)
}
