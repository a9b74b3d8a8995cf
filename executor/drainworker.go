package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// The drain worker's rounds: each stops every live session of the host
// once over one connection, recording each step on the host; between
// rounds it waits drainRetry, and it ends when nothing runs, the deadline
// passes or the host stops draining.

// drainWorker is one worker's state.
type drainWorker struct {
	e        *Executor
	host     string
	progress func(string)
	helper   *remote.Helper // found on the host once, shared by every session and round
	claim    *records.Held  // the host's drain
}

// held is nil while this worker still holds the drain, else the loss:
// keep ends ctx when it sees the claim lost, and a worker that runs on
// before its keeper has seen it (a process frozen past its TTL, just
// thawed) finds another holder, or none, in the store. Every write and
// every session stop asks first, so none starts after the loss; the
// instant between this read and a write is not fenced (the host record
// is not the claimed one).
func (w *drainWorker) held(ctx context.Context) error {
	if err := lostClaim(ctx, ctx.Err()); isStale(err) {
		return err
	}
	c, err := w.e.cfg.Store.ClaimHolder(context.WithoutCancel(ctx), records.KindHostDrain, w.host)
	if err != nil {
		return err
	}
	if c == nil || c.ID != w.claim.ID() {
		return &state.StaleClaimError{Kind: records.KindHostDrain, Name: w.host, Reason: "another drain worker holds it now, or nobody does"}
	}
	return nil
}

func (w *drainWorker) say(format string, a ...any) {
	if w.progress != nil {
		w.progress(fmt.Sprintf(format, a...))
	}
}

func (w *drainWorker) run(ctx context.Context) (*records.HostDrain, error) {
	h, err := records.Mutate(ctx, w.e.cfg.Store, records.KindHost, w.host, "host.drain_step", func(h *records.Host) error {
		if h.Drain == nil || h.Drain.State != records.DrainRunning {
			return errSettled
		}
		h.Drain.WorkerPID, h.Drain.Last = os.Getpid(), "worker started"
		return nil
	})
	if errors.Is(err, errSettled) {
		cur, _, gerr := w.e.getHost(ctx, w.host)
		if gerr != nil {
			return nil, gerr
		}
		w.say("no drain of host %s is under way", w.host)
		return cur.Drain, nil
	}
	if err != nil {
		return nil, err
	}
	w.say("draining host %s until %s", w.host, h.Drain.Deadline.Format(time.RFC3339))
	for {
		h, _, err := w.e.getHost(ctx, w.host)
		if err != nil {
			return nil, err
		}
		d := h.Drain
		if d == nil || d.State != records.DrainRunning {
			return d, nil // ended by another hand: nothing left for this worker
		}
		if s := h.EffectiveStatus(time.Now()); s != records.HostDraining && s != records.HostQuarantined {
			return w.finish(ctx, records.DrainCancelled, nil, fmt.Sprintf("host %s is %s now: the drain stops", w.host, s))
		}
		live, err := w.e.liveSessions(ctx, w.host)
		if err != nil {
			return d, err
		}
		if len(live) == 0 {
			return w.finish(ctx, records.DrainComplete, nil, fmt.Sprintf("all sessions on host %s have stopped; it stays cordoned (`kandev-exec host uncordon %s` takes launches again)", w.host, w.host))
		}
		if !time.Now().Before(d.Deadline) {
			left := make([]records.DrainLeft, len(live))
			for i, s := range live {
				left[i] = records.DrainLeft{Session: s.ID, TaskID: s.TaskID, Why: whyLeft(d, s.ID)}
			}
			return w.finish(ctx, records.DrainDeadline, left, fmt.Sprintf("the deadline %s passed with %d session(s) still running", d.Deadline.Format(time.RFC3339), len(left)))
		}
		if err := w.round(ctx, d.Deadline, live); err != nil {
			return d, err
		}
		if ctx.Err() != nil {
			return d, ctx.Err()
		}
		if left, _ := w.e.liveSessions(ctx, w.host); len(left) > 0 {
			wait := min(drainRetry, time.Until(d.Deadline))
			t := time.NewTimer(max(wait, 0))
			select {
			case <-ctx.Done():
				t.Stop()
				return d, ctx.Err()
			case <-t.C:
			}
		}
	}
}

// whyLeft is what the last round said about a session, if anything.
func whyLeft(d *records.HostDrain, id string) string {
	for _, l := range d.Remaining {
		if l.Session == id {
			return l.Why
		}
	}
	return "not reached before the deadline"
}

// liveSessions are the host's sessions that may have a running agent.
func (e *Executor) liveSessions(ctx context.Context, host string) ([]*records.Session, error) {
	ss, _, err := records.List[records.Session](ctx, e.cfg.Store, records.KindSession)
	if err != nil {
		return nil, err
	}
	var out []*records.Session
	for _, s := range ss {
		if s.Host == host && (s.State == records.SessionRunning || s.State == records.SessionStarting) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *records.Session) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// round stops each live session once, over one connection. It ends
// early, saying so, when the worker lost the drain.
func (w *drainWorker) round(ctx context.Context, deadline time.Time, live []*records.Session) error {
	h, _, err := w.e.getHost(ctx, w.host)
	var hc *hostConn
	if err == nil {
		hc, err = w.e.connect(ctx, h)
	}
	if err != nil {
		left := make([]records.DrainLeft, len(live))
		for i, s := range live {
			left[i] = records.DrainLeft{Session: s.ID, TaskID: s.TaskID, Why: oneLine(err)}
		}
		return w.step(ctx, nil, left, fmt.Sprintf("unreachable: %s; retrying in %s", oneLine(err), drainRetry))
	}
	defer hc.Close()
	// The helper found in an earlier round is still in place.
	hc.helper = w.helper
	defer func() { w.helper = hc.helper }()
	var left []records.DrainLeft
	for _, s := range live {
		if ctx.Err() != nil {
			return nil
		}
		w.say("session %s (task %s): stopping", s.ID, s.TaskID)
		if err := w.held(ctx); err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, min(time.Until(deadline), maxSessionStop))
		end, err := w.stop(sctx, hc, s)
		cancel()
		switch {
		case err != nil:
			l := records.DrainLeft{Session: s.ID, TaskID: s.TaskID, Why: oneLine(err)}
			left = append(left, l)
			err = w.step(ctx, nil, []records.DrainLeft{l}, fmt.Sprintf("session %s (task %s): not stopped yet: %s; retrying in %s", s.ID, s.TaskID, l.Why, drainRetry))
		default:
			err = w.step(ctx, []string{s.ID}, nil, fmt.Sprintf("session %s (task %s): %s; its task directory stays (`kandev-exec task resume %s`)", s.ID, s.TaskID, end, s.TaskID))
		}
		if err != nil {
			return err
		}
	}
	return w.setRemaining(ctx, left)
}

// stop stops one session the way `session stop` does. It says how the
// session ended, or why it could not be stopped now.
func (w *drainWorker) stop(ctx context.Context, hc *hostConn, s *records.Session) (string, error) {
	s, err := w.e.startedSession(ctx, s.ID)
	var ns *NotStartedError
	switch {
	case errors.As(err, &ns) && isFinal(ns.S.State):
		return string(ns.S.State), nil
	case errors.As(err, &ns):
		return "", errors.New("still starting: its launch is under way")
	case err != nil:
		return "", err
	}
	t, _, err := records.Get[records.Task](ctx, w.e.cfg.Store, records.KindTask, s.TaskID)
	if err != nil {
		return "", err
	}
	s, err = w.e.stopAttached(ctx, attachOn(hc, t, s))
	if err != nil {
		return "", err
	}
	return string(s.State), nil
}

// step records one step on the host (the journal carries it) and says it;
// a worker that lost the drain records nothing and says why.
func (w *drainWorker) step(ctx context.Context, stopped []string, left []records.DrainLeft, msg string) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	w.say("%s", msg)
	_, _ = records.Mutate(context.WithoutCancel(ctx), w.e.cfg.Store, records.KindHost, w.host, "host.drain_step", func(h *records.Host) error {
		if h.Drain == nil || h.Drain.State != records.DrainRunning {
			return errSettled
		}
		h.Drain.Stopped = append(h.Drain.Stopped, stopped...)
		for _, l := range left {
			h.Drain.Remaining = setLeft(h.Drain.Remaining, l)
		}
		for _, id := range stopped {
			h.Drain.Remaining = slices.DeleteFunc(h.Drain.Remaining, func(l records.DrainLeft) bool { return l.Session == id })
		}
		h.Drain.Last = msg
		return nil
	})
	return nil
}

// setRemaining records what a round left running, unless the worker lost
// the drain.
func (w *drainWorker) setRemaining(ctx context.Context, left []records.DrainLeft) error {
	if err := w.held(ctx); err != nil {
		return err
	}
	_, _ = records.Mutate(context.WithoutCancel(ctx), w.e.cfg.Store, records.KindHost, w.host, "host.drain_step", func(h *records.Host) error {
		if h.Drain == nil || h.Drain.State != records.DrainRunning {
			return errSettled
		}
		if left == nil {
			left = []records.DrainLeft{}
		}
		if slices.Equal(h.Drain.Remaining, left) {
			return errSettled // the steps already say so: no event
		}
		h.Drain.Remaining = left
		return nil
	})
	return nil
}

func setLeft(ls []records.DrainLeft, l records.DrainLeft) []records.DrainLeft {
	for i := range ls {
		if ls[i].Session == l.Session {
			ls[i] = l
			return ls
		}
	}
	return append(ls, l)
}

// finish ends the drain in state, and a complete drain's host ends
// cordoned (a quarantined one stays quarantined).
func (w *drainWorker) finish(ctx context.Context, state records.DrainState, left []records.DrainLeft, msg string) (*records.HostDrain, error) {
	if err := w.held(ctx); err != nil {
		return nil, err
	}
	w.say("%s", msg)
	h, err := records.Mutate(ctx, w.e.cfg.Store, records.KindHost, w.host, "host.drain_"+string(state), func(h *records.Host) error {
		if h.Drain == nil || h.Drain.State != records.DrainRunning {
			return errSettled
		}
		at := nowSecond()
		h.Drain.State, h.Drain.Last, h.Drain.EndedAt = state, msg, &at
		if left == nil {
			left = []records.DrainLeft{}
		}
		h.Drain.Remaining = left
		if state == records.DrainComplete && h.EffectiveStatus(at) == records.HostDraining {
			return h.SetStatus(records.HostCordoned, h.StatusReason, h.Drain.By, at, nil)
		}
		return nil
	})
	if errors.Is(err, errSettled) {
		cur, _, gerr := w.e.getHost(ctx, w.host)
		if gerr != nil {
			return nil, gerr
		}
		return cur.Drain, nil
	}
	if err != nil {
		return nil, err
	}
	return h.Drain, nil
}

// oneLine is an error as one line of a log or a table.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
