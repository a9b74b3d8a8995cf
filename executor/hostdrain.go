package executor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// A host drain (kubectl drain, nomad node drain) cordons the host, then
// stops every session on it the way `session stop` does: gracefully,
// then the process group, the task directories kept so each task can be
// resumed elsewhere or later. It is not teardown: nothing is sealed,
// drained with receipts or removed. The work runs in one worker per host,
// on whichever machine (it holds the claim on the host's hostdrain
// record, kept alive while it works), in rounds, until no session runs
// (the host then stays cordoned), the deadline passes (the sessions left
// are listed) or the host is uncordoned. Each step lands on the host
// record, so the journal carries it and `host show` tells where it
// stands.

// DefaultDrainDeadline is how long a drain tries (Nomad's default).
const DefaultDrainDeadline = time.Hour

// drainRetry is the wait between rounds while sessions are left.
const drainRetry = 5 * time.Second

// maxSessionStop bounds one session's stop; the controller's own grace
// period and its process-group kill fit well inside.
const maxSessionStop = 2 * time.Minute

// drainWorkerWait bounds how long a new worker waits for the one before
// it to let go (a worker hands over only at its end).
const drainWorkerWait = 2 * time.Second

// HostDrainPendingError: a host drain has work left (exit 8). Either it
// goes on in a background worker (WorkerPID), or its deadline passed with
// Remaining sessions still running and the host stays draining.
type HostDrainPendingError struct {
	Host      string
	WorkerPID int
	Log       string
	Deadline  time.Time
	Remaining []records.DrainLeft
}

func (e *HostDrainPendingError) Error() string {
	if e.WorkerPID > 0 {
		return fmt.Sprintf("the drain of host %s goes on in the background (worker pid %d); `kandev-exec host drain %s` follows it (Ctrl-C leaves it running), `kandev-exec host show %s` says where it stands, and its log is %s",
			e.Host, e.WorkerPID, e.Host, e.Host, e.Log)
	}
	left := make([]string, len(e.Remaining))
	for i, l := range e.Remaining {
		left[i] = fmt.Sprintf("session %s (task %s): %s", l.Session, l.TaskID, l.Why)
	}
	return fmt.Sprintf("the drain deadline %s passed with %d session(s) still running on %s: %s; the host stays draining (no new launches): `kandev-exec host drain %s` carries on",
		e.Deadline.UTC().Format(time.RFC3339), len(e.Remaining), e.Host, strings.Join(left, "; "), e.Host)
}

// DrainLog is where the drain worker of a host writes: one log per host
// under the state directory, appended to by every drain.
func (e *Executor) DrainLog(host string) (string, error) {
	if err := ValidateHostName(host); err != nil {
		return "", &UsageError{Msg: err.Error()}
	}
	dir, err := e.localDir("logs")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "drain-"+host+".log"), nil
}

// BeginHostDrain cordons the host for a drain (status draining; a
// quarantined host stays quarantined, its sessions are stopped all the
// same) and records the drain: a new one starting at logOffset of log,
// or, while one runs, the same one with the new deadline.
func (e *Executor) BeginHostDrain(ctx context.Context, name string, deadline time.Time, log string, logOffset int64) (*records.HostDrain, error) {
	by := actor("host drain")
	h, err := records.Mutate(ctx, e.cfg.Store, records.KindHost, name, "host.draining", func(h *records.Host) error {
		at := nowSecond()
		d := h.Drain
		if d == nil || d.State != records.DrainRunning {
			d = &records.HostDrain{State: records.DrainRunning, StartedAt: at, Log: log, LogOffset: logOffset,
				Stopped: []string{}, Remaining: []records.DrainLeft{}}
		}
		d.Deadline, d.By = deadline.UTC().Truncate(time.Second), by
		d.Last = fmt.Sprintf("drain requested, deadline %s", d.Deadline.Format(time.RFC3339))
		h.Drain = d
		switch s := h.EffectiveStatus(at); s {
		case records.HostQuarantined, records.HostDraining:
			return nil
		case records.HostCordoned:
			return h.SetStatus(records.HostDraining, h.StatusReason, by, at, nil)
		}
		return h.SetStatus(records.HostDraining, "host drain", by, at, nil)
	})
	if err != nil {
		return nil, err
	}
	return h.Drain, nil
}

// DrainWorker names the process running the host's drain (on any
// machine sharing the store), nil when none does.
func (e *Executor) DrainWorker(ctx context.Context, host string) (*state.Holder, error) {
	c, err := e.cfg.Store.ClaimHolder(ctx, records.KindHostDrain, host)
	if err != nil || c == nil {
		return nil, err
	}
	return &c.Holder, nil
}

// claimDrain takes the host's drain: its hostdrain record's claim, the
// record made on the first drain. Another live worker is a
// *state.ClaimedError naming it, once wait has passed without it letting
// go (a worker lets go only at its end).
func (e *Executor) claimDrain(ctx context.Context, host string, wait time.Duration) (*records.Held, error) {
	deadline := time.Now().Add(wait)
	for {
		h, err := records.Acquire(ctx, e.cfg.Store, records.KindHostDrain, host, e.claimTTL())
		if errors.Is(err, state.ErrNotFound) {
			h, err = records.CreateClaimed(ctx, e.cfg.Store, records.KindHostDrain, host, "hostdrain.created",
				&records.HostDrainWorker{Name: host}, e.claimTTL(), nil)
			var exists *state.ConflictError
			if errors.As(err, &exists) {
				continue // another worker made it first: take it, or say who has it
			}
		}
		var claimed *state.ClaimedError
		if !errors.As(err, &claimed) || !time.Now().Before(deadline) {
			return h, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RunHostDrain is a drain's worker: it takes the host's drain (a
// *state.ClaimedError naming the holder when another worker has it),
// keeps it while it works, in rounds until the drain ends, then returns
// it as recorded. A worker that loses its claim (frozen past its TTL,
// another took over) stops without a further step. progress gets one
// line per step.
func (e *Executor) RunHostDrain(ctx context.Context, name string, progress func(string)) (*records.HostDrain, error) {
	held, err := e.claimDrain(ctx, name, drainWorkerWait)
	if err != nil {
		return nil, err
	}
	defer held.Release(context.WithoutCancel(ctx))
	ctx, stop := e.keep(ctx, held)
	defer stop()
	w := &drainWorker{e: e, host: name, progress: progress, claim: held}
	d, err := w.run(ctx)
	if err = lostClaim(ctx, err); err != nil && d != nil && d.State == records.DrainRunning && !isStale(err) {
		// The worker itself failed (or was stopped by a signal): say so
		// on the host, so a follower does not wait for it.
		d, _ = w.finish(context.WithoutCancel(ctx), records.DrainFailed, nil, fmt.Sprintf("the drain worker stopped: %v; `kandev-exec host drain %s` resumes", err, name))
	}
	return d, err
}

func isStale(err error) bool {
	var stale *state.StaleClaimError
	return errors.As(err, &stale)
}
