package executor

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// mutate applies change to the current record and writes it back at the
// revision read, retrying a few times when another process wrote in
// between: the store's compare-and-swap keeps every write, ours and
// theirs.
func mutate[T any](ctx context.Context, st state.Store, kind state.Kind, name, event string, change func(*T) error) (*T, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		v, rec, err := getRecord[T](ctx, st, kind, name)
		if err != nil {
			return nil, err
		}
		if err := change(v); err != nil {
			return nil, err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		_, err = st.Update(ctx, kind, name, rec.Revision, data, state.Event{Type: event})
		var conflict *state.ConflictError
		if errors.As(err, &conflict) {
			lastErr = err
			continue
		}
		return v, err
	}
	return nil, lastErr
}

func (e *Executor) updateTask(ctx context.Context, id, event string, change func(*records.Task) error) (*records.Task, error) {
	return mutate(ctx, e.cfg.Store, records.KindTask, id, event, change)
}

func (e *Executor) updateSession(ctx context.Context, id, event string, change func(*records.Session) error) (*records.Session, error) {
	return mutate(ctx, e.cfg.Store, records.KindSession, id, event, change)
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
		_, err := tx.Create(kind, name, data, state.Event{Type: event})
		return err
	})
}
