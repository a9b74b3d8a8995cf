package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/kdlbs/kandev-exec/state"
)

// call is one Store call: bounded by the store's timeout as a whole, and
// each request within it by a shorter attempt timeout. A request sent to
// a member that lost its leader can wait server-side for seconds; cut
// short, it is tried again (reads), replanned (writes) or settled (a
// write whose outcome was lost) while the call's deadline allows.
type call struct {
	s      *Store
	caller context.Context // the caller's: its end is never retried
	ctx    context.Context // the caller's, bounded by the timeout
	cancel context.CancelFunc
	op     string // for messages: "update host web"
	start  time.Time
}

func (s *Store) begin(ctx context.Context, op string) (*call, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("state store %s: %w", s.name, fs.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	return &call{s: s, caller: ctx, ctx: cctx, cancel: cancel, op: op, start: time.Now()}, nil
}

func (c *call) end() { c.cancel() }

// attemptTimeout bounds one request: long enough for any healthy answer
// and an election, short enough to leave the call room for retries.
func (s *Store) attemptTimeout() time.Duration { return max(s.timeout/5, 500*time.Millisecond) }

// attempt is the context of one request.
func (c *call) attempt() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.s.attemptTimeout())
}

// fail turns what the client returned into the store's errors (see
// Store.fail); errors that are already the store's pass through.
func (c *call) fail(err error) error { return c.s.fail(c.caller, c.op, c.start, err) }

// retry runs fn, one attempt at a time, until it succeeds or fails for a
// reason other than an unreachable cluster, or the call's deadline
// passes. fn must be safe to repeat (a read).
func (c *call) retry(fn func(actx context.Context) error) error {
	for {
		actx, cancel := c.attempt()
		err := c.fail(fn(actx))
		cancel()
		if err == nil || !c.again(err) {
			return err
		}
	}
}

// again reports whether a failed attempt should be tried again, after a
// short pause: the cluster was unreachable and the call has time left.
func (c *call) again(err error) bool {
	var ue *state.UnreachableError
	if !errors.As(err, &ue) || ue.Unknown {
		return false
	}
	select {
	case <-c.ctx.Done():
		return false
	case <-time.After(25 * time.Millisecond):
		return c.ctx.Err() == nil
	}
}

// unreachable is the call's failure when its deadline passed, last
// being the last attempt's.
func (c *call) unreachable(last *state.UnreachableError) error {
	return &state.UnreachableError{Store: c.s.name, Op: c.op, Waited: time.Since(c.start), Err: last.Err}
}
