package executor

import (
	"context"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

func (e *Executor) updateSession(ctx context.Context, id, event string, change func(*records.Session) error) (*records.Session, error) {
	return records.Mutate(ctx, e.cfg.Store, records.KindSession, id, event, change)
}

// createRecord stores a new record in its first state. One that points
// at others (a task at its host, profile and agent; a session at its
// task) is created in one transaction with the check that they still
// exist.
func (e *Executor) createRecord(ctx context.Context, kind state.Kind, name, event string, v any) error {
	_, err := records.Create(ctx, e.cfg.Store, kind, name, v, records.EventFor(event, v),
		func(tx state.Tx) error { return checkReferences(tx, v) })
	return err
}
