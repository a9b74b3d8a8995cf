package executor

import (
	"context"
	"encoding/json"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

func (e *Executor) updateSession(ctx context.Context, id, event string, change func(*records.Session) error) (*records.Session, error) {
	return records.Mutate(ctx, e.cfg.Store, records.KindSession, id, event, change)
}

// createRecord stores a new record. One that points at others (a task at
// its host, profile and agent; a session at its task) is created in one
// transaction with the check that they still exist.
func (e *Executor) createRecord(ctx context.Context, kind state.Kind, name, event string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.cfg.Store.Txn(ctx, func(tx state.Tx) error {
		if err := checkReferences(tx, v); err != nil {
			return err
		}
		_, err := tx.Create(kind, name, data, records.EventFor(event, v))
		return err
	})
}
