package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kdlbs/kandev-exec/state"
)

// InUseError refuses to remove what tasks still reference.
type InUseError struct {
	What, Name string
	Users      []string // "task t...", "profile p"
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s %q is still used by %s; archive or delete those first, or pass --force",
		e.What, e.Name, strings.Join(e.Users, ", "))
}

// tasksUsing lists the tasks whose environment may still exist and whose
// field (as the JSON names it: "profile", "agent") equals name. Archived
// and deleted tasks (phase absent) need nothing any more.
func (e *Executor) tasksUsing(ctx context.Context, field, name string) ([]string, error) {
	recs, err := e.cfg.Store.List(ctx, KindTask)
	if err != nil {
		return nil, err
	}
	var users []string
	for _, r := range recs {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(r.Data, &doc); err != nil {
			return nil, fmt.Errorf("task %q: corrupt record in the state store: %w", r.Name, err)
		}
		var v, phase string
		_ = json.Unmarshal(doc["phase"], &phase)
		if json.Unmarshal(doc[field], &v) == nil && v == name && phase != PhaseAbsent {
			users = append(users, r.Name)
		}
	}
	return users, nil
}

// removeUnused deletes a record at the revision read, unless tasks use it
// and force is false.
func (e *Executor) removeUnused(ctx context.Context, kind state.Kind, name string, rev uint64, force bool) error {
	users, err := e.tasksUsing(ctx, string(kind), name)
	if err != nil {
		return err
	}
	if len(users) > 0 && !force {
		for i, u := range users {
			users[i] = "task " + u
		}
		return &InUseError{What: string(kind), Name: name, Users: users}
	}
	return e.cfg.Store.Delete(ctx, kind, name, rev, state.Event{Type: string(kind) + ".removed"})
}
