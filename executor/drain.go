package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/records"
)

// Drain before destroy (docs/architecture.md, "Drain"): every session of
// the task that may have a controller is sealed and stopped, and its
// controller signs a receipt for this claim, which is verified with the
// session token. Only drained and not_attempted let teardown destroy
// anything; unreachable and uncertain keep the directory and quarantine
// the host. A process that does not prove it is ours is never signalled.

// maxGracefulStop bounds one session's graceful stop.
const maxGracefulStop = 15 * time.Second

// drainGrace is how long the controller lets the agent end after SIGTERM
// within a drain bounded by bound: two thirds of it, so that the kill,
// the receipt and the answer fit in the last third.
func drainGrace(bound time.Duration) time.Duration {
	return max(bound*2/3, 100*time.Millisecond)
}

// drain drains t's sessions and says what it proved.
func (a *attempt) drain(ctx context.Context, t *records.Task) (records.DrainOutcome, []string, string) {
	var live []*records.Session
	for _, id := range t.Sessions {
		s, _, err := records.Get[records.Session](ctx, a.e.cfg.Store, records.KindSession, id)
		if err != nil {
			return records.DrainUncertain, nil, fmt.Sprintf("session %s: %v", id, err)
		}
		// Failed: its launch ended before any controller start, which
		// recovery proved before this attempt began.
		if s.ControllerStartAt != nil && s.State != records.SessionFailed {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return records.DrainNotAttempted, nil, "no session of the task ever started a controller"
	}
	if err := a.connect(ctx, t); err != nil {
		return records.DrainUnreachable, nil, err.Error()
	}
	outcome := records.DrainDrained
	var receipts, details []string
	for _, s := range live {
		o, receipt, detail := a.drainSession(ctx, t, s)
		if receipt != "" {
			receipts = append(receipts, receipt)
		}
		details = append(details, fmt.Sprintf("session %s: %s", s.ID, detail))
		switch {
		case o == records.DrainUnreachable:
			outcome = o
		case o == records.DrainUncertain && outcome == records.DrainDrained:
			outcome = o
		}
	}
	// The helper was looked for beside the drain: a host where it cannot
	// be reached is unreachable, as it was when the look came first (a
	// drain that failed says so first).
	if err := a.hc.conv.wait(ctx); err != nil && outcome == records.DrainDrained {
		return records.DrainUnreachable, nil, err.Error()
	}
	return outcome, receipts, strings.Join(details, "; ")
}

// drainSession seals and stops one session within min(15 s, a third of
// what is left of the budget). detail says what was proved.
func (a *attempt) drainSession(ctx context.Context, t *records.Task, s *records.Session) (records.DrainOutcome, string, string) {
	at := attachOn(a.hc, t, s)
	bound := min(maxGracefulStop, a.remaining()/3)
	drainFailed := false
	if at.ctrl != nil {
		bctx, cancel := context.WithTimeout(ctx, bound)
		o, receipt, detail, done := a.drainByReceipt(bctx, at, drainGrace(bound))
		cancel()
		if done {
			return o, receipt, detail
		}
		drainFailed = detail != ""
	}
	// The controller does not answer, failed the drain (or went away under
	// it), or this machine has no token for it: ask the host whether it,
	// or its agent, still runs.
	id, err := a.e.probeController(ctx, at, protocol.OpControllerProbe)
	if err != nil {
		return a.linkOr(records.DrainUncertain), "", fmt.Sprintf("asking the host about its controller: %v", err)
	}
	if id.Alive && id.Ours && (at.ctrl == nil || drainFailed) {
		// Another machine launched it, or it failed the drain as it
		// exits: the only stop that can be proved is the controller's
		// own, signalled once it proved to be ours, its end then read
		// from the host.
		kctx, cancel := context.WithTimeout(ctx, max(bound, 20*time.Second))
		id, err = a.e.probeController(kctx, at, protocol.OpControllerKill)
		cancel()
		if err != nil {
			return a.linkOr(records.DrainUncertain), "", fmt.Sprintf("stopping its controller: %v", err)
		}
	}
	switch {
	case id.Alive && (id.Ours || s.StartTime == 0):
		return records.DrainUncertain, "", fmt.Sprintf("controller pid %d is alive but did not confirm a stop within %s", id.PID, bound.Round(time.Millisecond))
	case id.Alive:
		// The pid was reused by another process: ours is gone.
	case id.Orphan > 0:
		return records.DrainUncertain, "", fmt.Sprintf("its controller is gone but the agent's process group %d still runs", id.Orphan)
	}
	at.orphan = id.Orphan
	if _, _, err := a.e.finalFromHost(ctx, at); err != nil {
		return a.linkOr(records.DrainUncertain), "", fmt.Sprintf("reading how it ended: %v", err)
	}
	return records.DrainDrained, "", "its controller is gone and its agent ended"
}

// drainByReceipt asks the controller to seal and stop, killing the agent
// after grace, and verifies its receipt. done is false when the
// controller could not be asked at all, or failed the drain without
// running out of time (detail then says how): a controller that is
// exiting (its linger over, its directory gone) refuses or cuts off the
// request, or fails writing its session's files, and the host shows how
// its session ended.
func (a *attempt) drainByReceipt(ctx context.Context, at *attach, grace time.Duration) (o records.DrainOutcome, receipt, detail string, done bool) {
	_, err := at.ctrl.Health(ctx)
	switch {
	case errors.Is(err, controller.ErrBusy):
		return records.DrainUncertain, "", "its controller refuses connections (another user may hold them all)", true
	case err != nil && a.hc.lost():
		return records.DrainUnreachable, "", fmt.Sprintf("the connection to %s was lost", at.s.Host), true
	case err != nil:
		return "", "", "", false
	}
	r, err := at.ctrl.Drain(ctx, a.tc.ID(), grace)
	switch {
	case err == nil && r.ClaimID == a.tc.ID() && r.SessionID == at.s.ID && controller.VerifyReceipt(at.token, r):
	case err == nil:
		return records.DrainUncertain, "", "its controller's receipt does not verify", true
	case a.hc.lost():
		return records.DrainUnreachable, "", fmt.Sprintf("the connection to %s was lost while draining", at.s.Host), true
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return records.DrainUncertain, "", "its controller did not confirm the stop in time", true
	default:
		return "", "", fmt.Sprintf("draining its controller: %v", err), false
	}
	rec := &records.Receipt{ClaimID: r.ClaimID, State: records.SessionState(r.State), ExitCode: r.ExitCode, Killed: r.Killed,
		DrainedAt: r.DrainedAt, Proof: r.Proof}
	_, err = records.Mutate(context.WithoutCancel(ctx), a.e.cfg.Store, records.KindSession, at.s.ID, "session.drained", func(x *records.Session) error {
		x.Receipt = rec
		if !x.State.Ended() && rec.State.Ended() {
			x.ExitCode = rec.ExitCode
			now := rec.DrainedAt
			x.EndedAt = &now
			return x.Move(rec.State)
		}
		return nil
	})
	if err != nil {
		return records.DrainUncertain, "", fmt.Sprintf("recording its receipt: %v", err), true
	}
	how := "sealed and stopped"
	if r.Killed {
		how = fmt.Sprintf("sealed and killed (its process group outlived the %s grace after SIGTERM)", grace)
	}
	return records.DrainDrained, rec.Short(), how + ", receipt " + rec.Short(), true
}

// linkOr is unreachable when the connection died, else o.
func (a *attempt) linkOr(o records.DrainOutcome) records.DrainOutcome {
	if a.hc != nil && a.hc.lost() {
		return records.DrainUnreachable
	}
	return o
}

// actor names who did something, for a host's status_by: what ran, as
// whom, where.
func actor(what string) string {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s (%s@%s, pid %d)", what, who, host, os.Getpid())
}
