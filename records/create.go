package records

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/kdlbs/kandev-exec/internal/crashpoint"
	"github.com/kdlbs/kandev-exec/state"
)

// The states each type's records are created in: a create is the first
// move of a record, and the tables hold it like every other.
var (
	firstPhases        = []Phase{PhaseAllocating}        // the intent, before anything on the host
	firstSessionStates = []SessionState{SessionStarting} // a launch under way
	firstHostStatuses  = []HostStatus{HostAdmitted}      // `host add`
	firstJobStates     = []JobState{JobPending}          // due at once
)

// Create stores a new record of v, journaled as ev, in one transaction
// with check (nil: none), so what check verified (the records it points
// at) still holds when it lands. A record in a state its type is never
// created in is a *TransitionError, and nothing is written. The write,
// once durable, is a crash point named by its event.
func Create(ctx context.Context, st state.Store, kind state.Kind, name string, v any, ev state.Event, check func(state.Tx) error) (state.Record, error) {
	if err := checkFirst(v); err != nil {
		return state.Record{}, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return state.Record{}, err
	}
	var rec state.Record
	if check == nil {
		rec, err = st.Create(ctx, kind, name, data, ev)
	} else {
		err = st.Txn(ctx, func(tx state.Tx) error {
			if err := check(tx); err != nil {
				return err
			}
			rec, err = tx.Create(kind, name, data, ev)
			return err
		})
	}
	if err == nil {
		crashpoint.Hit(ev.Type)
	}
	return rec, err
}

// checkFirst holds a new record to the states its type is created in.
func checkFirst(v any) error {
	switch r := v.(type) {
	case *Task:
		return checkStart(firstPhases, "task", r.ID, r.Phase)
	case *Session:
		return checkStart(firstSessionStates, "session", r.ID, r.State)
	case *Host:
		return checkStart(firstHostStatuses, "host", r.Name, r.Status)
	case *CleanupJob:
		return checkStart(firstJobStates, "cleanup job", r.ID, r.State)
	}
	return nil
}

func checkStart[S ~string](first []S, what, id string, s S) error {
	if slices.Contains(first, s) {
		return nil
	}
	return &TransitionError{What: what, ID: id, To: string(s), Create: true}
}
