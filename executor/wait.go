package executor

import (
	"context"

	"github.com/kdlbs/kandev-exec/records"
)

// StartedSession is the session prefix names, once its controller was
// started (a *NotStartedError before that): what a command that follows
// or waits for an agent checks before its own failures count as the
// tool's.
func (e *Executor) StartedSession(ctx context.Context, prefix string) (*records.Session, error) {
	return e.startedSession(ctx, prefix)
}
