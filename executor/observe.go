package executor

import (
	"context"
	"time"

	"github.com/kdlbs/kandev-exec/records"
)

// observeUnreachable records beside each session's state that its host
// could not be asked, when err says so (the link, not the question,
// failed): nothing else about the session changes. An observation
// already that recent is not written again. It returns the sessions it
// recorded, by ID.
func (e *Executor) observeUnreachable(ctx context.Context, err error, ids ...string) map[string]*records.Session {
	out := map[string]*records.Session{}
	if !linkDown(err) {
		return out
	}
	ctx = context.WithoutCancel(ctx)
	now := time.Now().UTC().Truncate(time.Second)
	for _, id := range ids {
		cur, _, gerr := records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, id)
		if gerr != nil {
			continue
		}
		if cur.Observation == records.ObservedUnreachable && cur.ObservedAt != nil && now.Sub(*cur.ObservedAt) < StaleAfter {
			out[id] = cur
			continue
		}
		if s, uerr := e.updateSession(ctx, id, "session.unreachable", func(x *records.Session) error {
			x.Observation, x.ObservedAt = records.ObservedUnreachable, &now
			return nil
		}); uerr == nil {
			out[id] = s
		}
	}
	return out
}
