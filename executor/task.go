package executor

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/state"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID is prefix + 12 random base32 characters: short to type, valid as
// a task directory segment, and unique without coordination.
func newID(prefix string) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + idEncoding.EncodeToString(b)[:12]
}

// GetTask reads the task ref names: its ID, else its name when exactly
// one task has that name, else a unique ID prefix.
func (e *Executor) GetTask(ctx context.Context, ref string) (*records.Task, state.Record, error) {
	id, err := e.resolveTask(ctx, ref)
	if err != nil {
		return nil, state.Record{}, err
	}
	return records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, id)
}

// resolveTask is resolveID for tasks, with names between an exact ID and
// an ID prefix: a name is what the user chose to type. Names are read
// from each record alone, so one unreadable task does not hide the others.
func (e *Executor) resolveTask(ctx context.Context, ref string) (string, error) {
	if records.CheckName(records.KindTask, ref) == nil {
		if _, err := e.cfg.Store.Get(ctx, records.KindTask, ref); err == nil {
			return ref, nil
		} else if !errors.Is(err, state.ErrNotFound) {
			return "", err
		}
	}
	recs, err := e.cfg.Store.List(ctx, records.KindTask)
	if err != nil {
		return "", records.WithRemedy(err)
	}
	named, live := tasksNamed(recs, ref)
	if len(live) > 0 {
		named = live // a name shared with archived tasks is the live one's
	}
	switch {
	case len(named) == 1:
		return named[0], nil
	case len(named) > 1:
		return "", &records.AmbiguousError{What: string(records.KindTask), Prefix: ref, Matches: named, ByName: true}
	case records.CheckName(records.KindTask, ref) != nil:
		return "", &records.NotFoundError{What: string(records.KindTask), Name: ref, ListCmd: "task ls"}
	}
	return records.ResolveID(ctx, e.cfg.Store, records.KindTask, ref)
}

// tasksNamed is the IDs of the task records named name, and of those
// among them that are live (not archived or absent).
func tasksNamed(recs []state.Record, name string) (named, live []string) {
	for _, r := range recs {
		var t struct {
			Name  string        `json:"name"`
			Phase records.Phase `json:"phase"`
		}
		if json.Unmarshal(r.Data, &t) != nil || t.Name != name {
			continue
		}
		named = append(named, r.Name)
		if t.Phase.Live() {
			live = append(live, r.Name)
		}
	}
	return named, live
}

// NameTakenError: a live task already has the name a launch asked for
// (exit 10).
type NameTakenError struct {
	Name, TaskID string
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("task name %q is taken by live task %s; choose another --name, or archive that task first (`kandev-exec task archive %s`)",
		e.Name, e.TaskID, e.TaskID)
}

// checkNameFree refuses t's name when a live task has it, within the
// transaction that creates t: two launches with one name cannot both pass.
func checkNameFree(tx state.Tx, t *records.Task) error {
	if t.Name == "" || t.Name == t.ID {
		return nil // no name of its own
	}
	recs, err := tx.List(records.KindTask)
	if err != nil {
		return err
	}
	if _, live := tasksNamed(recs, t.Name); len(live) > 0 {
		return &NameTakenError{Name: t.Name, TaskID: live[0]}
	}
	return nil
}

// GetSession resolves an ID prefix and reads the session.
func (e *Executor) GetSession(ctx context.Context, idPrefix string) (*records.Session, state.Record, error) {
	id, err := records.ResolveID(ctx, e.cfg.Store, records.KindSession, idPrefix)
	if err != nil {
		return nil, state.Record{}, err
	}
	return records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, id)
}

// ListTasks returns tasks, newest first, optionally on one host.
func (e *Executor) ListTasks(ctx context.Context, host string) ([]*records.Task, error) {
	ts, _, err := records.List[records.Task](ctx, e.cfg.Store, records.KindTask)
	if err != nil {
		return nil, err
	}
	out := make([]*records.Task, 0, len(ts))
	for _, t := range ts {
		if host == "" || t.Host == host {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// ListSessions returns sessions, newest first, optionally of one task.
// A start time is kept to the second, so sessions of one task started in
// the same second are ordered as the task records them (a stop and a
// resume often fall in one second), and ties across tasks by task ID, so
// the order is the same on every call.
func (e *Executor) ListSessions(ctx context.Context, taskPrefix string) ([]*records.Session, error) {
	var tasks []*records.Task
	if taskPrefix != "" {
		t, _, err := e.GetTask(ctx, taskPrefix)
		if err != nil {
			return nil, err
		}
		tasks = []*records.Task{t}
	} else {
		var err error
		if tasks, _, err = records.List[records.Task](ctx, e.cfg.Store, records.KindTask); err != nil {
			return nil, err
		}
	}
	ss, _, err := records.List[records.Session](ctx, e.cfg.Store, records.KindSession)
	if err != nil {
		return nil, err
	}
	// nth is a session's place in its task's list of sessions.
	nth := map[string]int{}
	for _, t := range tasks {
		for i, id := range t.Sessions {
			nth[id] = i
		}
	}
	out := make([]*records.Session, 0, len(ss))
	for _, s := range ss {
		if taskPrefix == "" || s.TaskID == tasks[0].ID {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case !a.StartedAt.Equal(b.StartedAt):
			return a.StartedAt.After(b.StartedAt)
		case a.TaskID != b.TaskID:
			return a.TaskID < b.TaskID
		case nth[a.ID] != nth[b.ID]:
			return nth[a.ID] > nth[b.ID]
		}
		return a.ID < b.ID
	})
	return out, nil
}
