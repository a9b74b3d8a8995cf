package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/state"
)

// Cross-record rules ("a host is removed only while nothing names it", "a
// task is created only while its host exists") are checked inside the
// store transaction of the write they guard, so a concurrent command
// cannot slip a reference in between the check and the write.

// InUseError refuses to remove what tasks still reference.
type InUseError struct {
	What, Name string
	Users      []string // "task t...", "profile p"
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s %q is still used by %s; archive or delete those first, or pass --force",
		e.What, e.Name, strings.Join(e.Users, ", "))
}

// tasksUsing lists the tasks whose field (as the JSON names it:
// "profile", "agent", "host") equals name and that still need that
// record: needs says which (nil: every task but a deleted one, phase
// absent).
func tasksUsing(tx state.Tx, field, name string, needs func(records.Phase, map[string]json.RawMessage) bool) ([]string, error) {
	if needs == nil {
		needs = func(p records.Phase, _ map[string]json.RawMessage) bool { return p != records.PhaseAbsent }
	}
	recs, err := tx.List(records.KindTask)
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
		if json.Unmarshal(doc[field], &v) == nil && v == name && needs(records.Phase(phase), doc) {
			users = append(users, "task "+r.Name)
		}
	}
	return users, nil
}

// profilesUsing lists the profiles naming host.
func profilesUsing(st state.Store, tx state.Tx, host string) ([]string, error) {
	recs, err := tx.List(records.KindProfile)
	if err != nil {
		return nil, records.WithRemedy(err)
	}
	var users []string
	for _, rec := range recs {
		p, err := records.Decode[profiles.Profile](st, rec)
		if err != nil {
			return nil, err
		}
		if p.Host == host {
			users = append(users, "profile "+p.Name)
		}
	}
	return users, nil
}

// removeUnused deletes a record of type T, in one transaction with the
// check that nothing uses it (users lists what does). force skips the
// check, and is needed to remove a record that cannot be read: a file
// that is not a record is discarded, data that is not a T deleted.
func removeUnused[T any](ctx context.Context, st state.Store, kind state.Kind, name string, force bool, users func(state.Tx) ([]string, error)) error {
	if err := records.CheckName(kind, name); err != nil {
		return err
	}
	err := st.Txn(ctx, func(tx state.Tx) error {
		rec, err := tx.Get(kind, name)
		if errors.Is(err, state.ErrNotFound) {
			return &records.NotFoundError{What: string(kind), Name: name, ListCmd: string(kind) + " ls"}
		}
		if err != nil {
			return records.WithRemedy(err)
		}
		if !force {
			if _, err := records.Decode[T](st, rec); err != nil {
				return err
			}
			names, err := users(tx)
			if err != nil {
				return err
			}
			if len(names) > 0 {
				return &InUseError{What: string(kind), Name: name, Users: names}
			}
		}
		return tx.Delete(kind, name, rec.Revision, state.Event{Type: string(kind) + ".removed"})
	})
	var corrupt *state.CorruptRecordError
	if force && errors.As(err, &corrupt) && corrupt.Kind == kind && corrupt.Name == name {
		return st.Discard(ctx, kind, name, state.Event{Type: string(kind) + ".discarded"})
	}
	return err
}

// A record that points at others (a task at its host, profile and agent;
// a session at its task) is created only while they all exist.
type recordRef struct {
	kind state.Kind
	name string
}

// referencesOf lists the records v points at.
func referencesOf(v any) []recordRef {
	switch r := v.(type) {
	case *records.Task:
		refs := []recordRef{{records.KindHost, r.Host}, {records.KindProfile, r.Profile}}
		if r.Agent != "" {
			refs = append(refs, recordRef{records.KindAgent, r.Agent})
		}
		return refs
	case *records.Session:
		return []recordRef{{records.KindTask, r.TaskID}}
	}
	return nil
}

// checkReferences fails with *records.NotFoundError when a record v points at is
// gone (removed by a concurrent command since v was planned).
func checkReferences(tx state.Tx, v any) error {
	for _, ref := range referencesOf(v) {
		_, err := tx.Get(ref.kind, ref.name)
		if errors.Is(err, state.ErrNotFound) {
			return &records.NotFoundError{What: string(ref.kind), Name: ref.name, ListCmd: string(ref.kind) + " ls"}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
