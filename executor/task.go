package executor

import (
	"context"
	"crypto/rand"
	"encoding/base32"
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

// GetTask resolves an ID prefix and reads the task.
func (e *Executor) GetTask(ctx context.Context, idPrefix string) (*records.Task, state.Record, error) {
	id, err := records.ResolveID(ctx, e.cfg.Store, records.KindTask, idPrefix)
	if err != nil {
		return nil, state.Record{}, err
	}
	return records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, id)
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
func (e *Executor) ListSessions(ctx context.Context, taskPrefix string) ([]*records.Session, error) {
	taskID := ""
	if taskPrefix != "" {
		t, _, err := e.GetTask(ctx, taskPrefix)
		if err != nil {
			return nil, err
		}
		taskID = t.ID
	}
	ss, _, err := records.List[records.Session](ctx, e.cfg.Store, records.KindSession)
	if err != nil {
		return nil, err
	}
	out := make([]*records.Session, 0, len(ss))
	for _, s := range ss {
		if taskID == "" || s.TaskID == taskID {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out, nil
}

// TaskIDs and SessionIDs serve shell completion from local state.
func (e *Executor) TaskIDs(ctx context.Context) ([]string, error) {
	return records.Names(ctx, e.cfg.Store, records.KindTask)
}
func (e *Executor) SessionIDs(ctx context.Context) ([]string, error) {
	return records.Names(ctx, e.cfg.Store, records.KindSession)
}
