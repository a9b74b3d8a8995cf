package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
)

// A host drain (kubectl drain, nomad node drain) cordons the host, then
// stops every session on it the way `session stop` does: gracefully,
// then the process group, the task directories kept so each task can be
// resumed elsewhere or later. It is not teardown: nothing is sealed,
// drained with receipts or removed. The work runs in one worker per host
// (a bounded lock naming its holder), in rounds, until no session runs
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
	dir := filepath.Join(e.cfg.StateDir, "logs")
	if _, err := fsx.EnsureDir(dir, 0o700); err != nil {
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

// DrainWorker names the process running the host's drain, nil when none
// does.
func (e *Executor) DrainWorker(host string) (*fsx.Holder, error) {
	l, err := e.lockDrain(context.Background(), host, 0)
	var le *fsx.LockedError
	if errors.As(err, &le) {
		if le.Holder == nil {
			return &fsx.Holder{}, nil
		}
		return le.Holder, nil
	}
	if err != nil {
		return nil, err
	}
	l.Release()
	return nil, nil
}

func (e *Executor) lockDrain(ctx context.Context, host string, wait time.Duration) (*fsx.Lock, error) {
	dir, err := e.locksDir()
	if err != nil {
		return nil, err
	}
	return fsx.Acquire(ctx, filepath.Join(dir, "drain-"+host), fsx.LockOptions{What: "the drain of host", Path: host, Wait: wait})
}

// RunHostDrain is a drain's worker: it takes the host's drain lock (a
// *fsx.LockedError naming the holder when another worker has it) and
// works in rounds until the drain ends, then returns it as recorded.
// progress gets one line per step.
func (e *Executor) RunHostDrain(ctx context.Context, name string, progress func(string)) (*records.HostDrain, error) {
	l, err := e.lockDrain(ctx, name, drainWorkerWait)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	w := &drainWorker{e: e, host: name, progress: progress}
	d, err := w.run(ctx)
	if err != nil && d != nil && d.State == records.DrainRunning {
		// The worker itself failed (or was stopped by a signal): say so
		// on the host, so a follower does not wait for it.
		d, _ = w.finish(context.WithoutCancel(ctx), records.DrainFailed, nil, fmt.Sprintf("the drain worker stopped: %v; `kandev-exec host drain %s` resumes", err, name))
	}
	return d, err
}

// drainWorker is one worker's state.
type drainWorker struct {
	e        *Executor
	host     string
	progress func(string)
	helper   *remoteHelper // found on the host once, shared by every session
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
		w.round(ctx, d.Deadline, live)
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

// round stops each live session once, over one connection.
func (w *drainWorker) round(ctx context.Context, deadline time.Time, live []*records.Session) {
	h, _, err := w.e.getHost(ctx, w.host)
	var c *ssh.Client
	if err == nil {
		c, err = w.e.dialHost(ctx, h)
	}
	if err != nil {
		left := make([]records.DrainLeft, len(live))
		for i, s := range live {
			left[i] = records.DrainLeft{Session: s.ID, TaskID: s.TaskID, Why: oneLine(err)}
		}
		w.step(ctx, nil, left, fmt.Sprintf("unreachable: %s; retrying in %s", oneLine(err), drainRetry))
		return
	}
	defer c.Close()
	wd := c.StartKeepalive(w.e.cfg.KeepaliveInterval, w.e.cfg.KeepaliveDeadline)
	defer wd.Stop()
	var left []records.DrainLeft
	for _, s := range live {
		if ctx.Err() != nil {
			return
		}
		w.say("session %s (task %s): stopping", s.ID, s.TaskID)
		sctx, cancel := context.WithTimeout(ctx, min(time.Until(deadline), maxSessionStop))
		end, err := w.stop(sctx, c, wd, s)
		cancel()
		switch {
		case err != nil:
			l := records.DrainLeft{Session: s.ID, TaskID: s.TaskID, Why: oneLine(err)}
			left = append(left, l)
			w.step(ctx, nil, []records.DrainLeft{l}, fmt.Sprintf("session %s (task %s): not stopped yet: %s; retrying in %s", s.ID, s.TaskID, l.Why, drainRetry))
		default:
			w.step(ctx, []string{s.ID}, nil, fmt.Sprintf("session %s (task %s): %s; its task directory stays (`kandev-exec task resume %s`)", s.ID, s.TaskID, end, s.TaskID))
		}
	}
	w.e.setRemaining(ctx, w.host, left)
}

// stop stops one session the way `session stop` does. It says how the
// session ended, or why it could not be stopped now.
func (w *drainWorker) stop(ctx context.Context, c *ssh.Client, wd *ssh.Watchdog, s *records.Session) (string, error) {
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
	a := w.e.attachOn(c, wd, t, s)
	a.helper = w.helper
	s, err = w.e.stopAttached(ctx, a)
	if a.helper != nil {
		w.helper = a.helper
	}
	if err != nil {
		return "", err
	}
	return string(s.State), nil
}

// step records one step on the host (the journal carries it) and says it.
func (w *drainWorker) step(ctx context.Context, stopped []string, left []records.DrainLeft, msg string) {
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
}

// setRemaining records what a round left running.
func (e *Executor) setRemaining(ctx context.Context, host string, left []records.DrainLeft) {
	_, _ = records.Mutate(context.WithoutCancel(ctx), e.cfg.Store, records.KindHost, host, "host.drain_step", func(h *records.Host) error {
		if h.Drain == nil || h.Drain.State != records.DrainRunning {
			return errSettled
		}
		if left == nil {
			left = []records.DrainLeft{}
		}
		h.Drain.Remaining = left
		return nil
	})
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
